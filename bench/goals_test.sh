#!/usr/bin/env bash
# CTest bench.goals_codec: runs goals.sh's codec part once (-k 1) and checks its table, so that a
# change of octet_codec_best_of's output cannot turn goals.sh's verdicts into nonsense: every
# SIMD target the CPU runs has its 3 rows (encode, stochastic rounding, decode) at each of its
# sizes, in L2 and from memory (and past L2 where 2^18 elements do not fit in it), each with a
# spread of numbers, and each row's "met" says whether its median reaches the limit in the goal's
# text. Exits 77 (skipped) without jq.
#
#   goals_test.sh BUILD_DIR OUT_DIR
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed: skipped"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
"$here/goals.sh" -B "$1" -o "$2" -k 1 codec >/dev/null
table=$2/goals.md
cat "$table"
awk -F' [|] ' '
  /^\| (exact|stochastic|decode)/ {
    rows[$0] = 1
    n = split($1, w, " ")
    target = ""
    for (i = 1; i <= n; ++i) if (w[i] ~ /^(AVX3_DL|AVX3|AVX2),$/) target = substr(w[i], 1, length(w[i]) - 1)
    ++per_target[target]
    if (!match($1, /(in L2|past L2|from memory) \([0-9]+/)) { print "no place: " $0; bad = 1; next }
    place = substr($1, RSTART, RLENGTH)
    if (!((target, place) in per_place)) ++places[target]
    ++per_place[target, place]
    if (place ~ /^in L2/) in_l2[target] = 1
    if (place ~ /^from memory/) from_memory[target] = 1
    if (!match($2, /\(median [0-9.]+/)) { print "no median: " $0; bad = 1; next }
    median = substr($2, RSTART + 8, RLENGTH - 8) + 0
    if (match($1, />= 85%/)) limit = 0.85
    else if (match($1, />= [0-9.]+ G\/s/)) limit = substr($1, RSTART + 3, RLENGTH - 7) + 0
    else { print "no limit: " $0; bad = 1; next }
    want = (median >= limit) ? "yes" : "no"
    # The table shows 3 significant digits and judges the unrounded median: a median shown as the
    # limit itself (2.4997 shows as 2.5) may be judged either way.
    e = log(median > 0 ? median : 1) / log(10)
    f = int(e)
    if (f > e) --f  # floor
    ulp = 10 ^ (f - 2)
    if (median - limit <= ulp / 2 && limit - median <= ulp / 2) want = $3
    if ($3 != want) { print "met is " $3 ", median " median " against " limit ": " $0; bad = 1 }
    if ($1 ~ /^\| decode/ && (median <= 0 || median > 3)) { print "not a fraction: " $0; bad = 1 }
    if ($1 !~ /^\| decode/ && median > 100) { print "not a rate: " $0; bad = 1 }
  }
  /not run: not a target/ { ++skipped }
  END {
    for (k in per_place)
      if (per_place[k] != 3) { split(k, tp, SUBSEP); print tp[1] ", " tp[2] ": " per_place[k] " rows, want 3"; bad = 1 }
    for (t in per_target) {
      if (places[t] < 2 || places[t] > 3) { print t ": " places[t] " sizes, want 2 or 3"; bad = 1 }
      if (!in_l2[t] || !from_memory[t]) { print t ": no row in L2 or none from memory"; bad = 1 }
    }
    if (length(per_target) + skipped != 3) { print "targets: " length(per_target) " run, " skipped " skipped"; bad = 1 }
    if (length(per_target) == 0) { print "no target ran"; bad = 1 }
    exit bad
  }' "$table"
echo "goals table consistent"
