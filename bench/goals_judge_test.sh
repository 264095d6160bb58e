#!/usr/bin/env bash
# CTest bench.goals_judge: goals.sh -J judges saved local runs, here made up, so that the local
# goal's verdict is shown to follow each size's median over the runs, not a run's lowest row:
#   * every run has one low row (0.90), each at another size: each size's median passes, while
#     the median of the runs' lowest rows (the old figure) would not; met: yes;
#   * two runs of three low at the same size: that size's median fails; met: no.
# Exits 77 (skipped) without jq.
#
#   goals_judge_test.sh BUILD_DIR OUT_DIR
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed: skipped"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
out=$2
sizes=(8 2048 8388608 134217728)

# run FILE LOW_BYTES LOW_SPEEDUP: a bench JSON whose rows are all 1.0 but LOW_BYTES's; 128 MiB
# compressed.
run() {
  local rows=() b s c
  for b in "${sizes[@]}"; do
    s=1.0 c=false
    [[ $b == "$2" ]] && s=$3
    ((b == 134217728)) && c=true
    rows+=("{\"bytes\": $b, \"speedup\": $s, \"compressed\": $c}")
  done
  local IFS=,
  echo "{\"rows\": [${rows[*]}], \"break_even_bytes\": 134217728, \"simd_target\": \"AVX2\"}" >"$1"
}

# judged: the local row of goals.sh -J on what is in $out.
judged() {
  "$here/goals.sh" -B "$1" -o "$out" -k 3 -J local >/dev/null
  grep '^| auto, 4 local ranks' "$out/goals.md"
}

expect() {
  local line=$1 met=$2 figure=$3
  [[ $line == *"| $met |"* ]] || { echo "want met $met: $line"; exit 1; }
  [[ $line == *"$figure"* ]] || { echo "want '$figure': $line"; exit 1; }
}

mkdir -p "$out"
for k in 0 1 2; do
  run "$out/local-auto-$k.json" "${sizes[$k]}" 0.90
  run "$out/local-never-$k.json" none 1.0
done
line=$(judged "$1")
expect "$line" yes "lowest median of a size 1 at"
expect "$line" yes "lowest speedup of a run 0.9-0.9"

run "$out/local-auto-1.json" 8 0.90
run "$out/local-auto-2.json" 134217728 0.80
line=$(judged "$1")
expect "$line" no "lowest median of a size 0.9 at 8 B"
expect "$line" no "compressed rows below 1/1.05: 1 of 3"

rm "$out/local-never-2.json"
if "$here/goals.sh" -B "$1" -o "$out" -k 3 -J local >/dev/null 2>&1; then
  echo "goals.sh -J judged with a run missing"
  exit 1
fi
echo "local goal judged on each size's median"
