#!/bin/bash
# Times `octet codec encode` and `decode` of a fp32 file (256 MiB by default) against baselines
# measured in the same run, on the same files: `cat` reading the input to /dev/null, and `cat`
# copying the input (and the payload) to a new file, i.e. the file I/O alone. Prints the median
# of each over the repeats, then, where strace is installed, the read/write/mmap calls of one
# encode and one decode (few and large: whole files, at most 1 GiB per call).
#
#   bench/cli/measure_io.sh [-B build] [-d dir] [-m MiB] [-r repeats] [octet binary ...]
#
# -d picks the file system: the default /tmp is a disk (its dirty-page writeback can stall a
# large write), /dev/shm is tmpfs. Extra binaries (e.g. an older build) are timed the same way.
set -euo pipefail
build=build dir=${TMPDIR:-/tmp} mib=256 repeats=5
while getopts B:d:m:r: opt; do
  case $opt in
    B) build=$OPTARG ;;
    d) dir=$OPTARG ;;
    m) mib=$OPTARG ;;
    r) repeats=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 1; }
binaries=("$build/src/cli/octet" "$@")
work=$(mktemp -d "$dir/octet-io.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Finite fp32 values of magnitude 2^-7..2^-3 with random signs and mantissas: random bits, the
# exponent forced (Python's big integers do it for the whole file at once, in a few seconds).
python3 - "$work/in.f32" "$mib" <<'PY'
import os, sys
n = int(sys.argv[2]) << 18  # floats
x = int.from_bytes(os.urandom(4 * n), "little")
keep = int.from_bytes(b"\xff\xff\xff\x81" * n, "little")
force = int.from_bytes(b"\x00\x00\x00\x3c" * n, "little")
open(sys.argv[1], "wb").write(((x & keep) | force).to_bytes(4 * n, "little"))
PY
"${binaries[0]}" codec encode "$work/in.f32" "$work/in.oct8"
cat "$work/in.f32" "$work/in.oct8" > /dev/null  # both in the page cache

# "elapsed cpu" seconds of one run, to 0.01 s (cpu = user + system: what the command itself cost,
# which a loaded machine inflates less than the elapsed time)
seconds() {
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$@"
  awk '{printf "%s %.2f", $1, $2 + $3}' "$work/time"
}
median() { sort -g | awk '{v[NR] = $1} END {printf "%.2f", v[int((NR + 1) / 2)]}'; }

declare -A elapsed cpu
row() {  # row <name> <command...>: time it `repeats` times
  local name=$1 t
  shift
  rm -f "$work/out"
  for _ in $(seq "$repeats"); do
    t=$(seconds "$@")
    elapsed[$name]+="${t% *} "
    cpu[$name]+="${t#* } "
  done
}
row "cat in.f32 > /dev/null" sh -c "cat $work/in.f32 > /dev/null"
row "cat in.f32 > out" sh -c "cat $work/in.f32 > $work/out"
row "cat in.oct8 > out" sh -c "cat $work/in.oct8 > $work/out"
names=("cat in.f32 > /dev/null" "cat in.f32 > out" "cat in.oct8 > out")
for b in "${binaries[@]}"; do
  row "$b encode" "$b" codec encode "$work/in.f32" "$work/out"
  row "$b decode" "$b" codec decode "$work/in.oct8" "$work/out"
  names+=("$b encode" "$b decode")
done

echo "# $mib MiB of fp32 ($(stat -c %s "$work/in.oct8") B payload) in $work ($(stat -f -c %T "$work")),"
echo "# median of $repeats runs, seconds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%8s %8s  %s\n" elapsed cpu command
for name in "${names[@]}"; do
  printf "%8s %8s  %s   (elapsed: %s)\n" "$(tr ' ' '\n' <<< "${elapsed[$name]}" | grep . | median)" \
    "$(tr ' ' '\n' <<< "${cpu[$name]}" | grep . | median)" "$name" "${elapsed[$name]% }"
done

if command -v strace > /dev/null; then
  for cmd in "encode $work/in.f32" "decode $work/in.oct8"; do
    echo "# strace -c -e trace=read,write,mmap,mremap,munmap ${binaries[0]} codec $cmd out"
    # shellcheck disable=SC2086
    strace -c -e trace=read,write,mmap,mremap,munmap "${binaries[0]}" codec $cmd "$work/out" 2>&1 |
      grep -E "calls|read|write|mmap|mremap|munmap|total"
    # shellcheck disable=SC2086
    strace -e trace=read,write -o "$work/trace" "${binaries[0]}" codec $cmd "$work/out"
    awk -F'= ' '/^(read|write)\(/ { c = substr($0, 1, 1); n[c]++; b[c] += $NF; if ($NF > m[c]) m[c] = $NF }
      END { printf "#   reads: %d calls, %d B, largest %d B; writes: %d calls, %d B, largest %d B\n",
                   n["r"], b["r"], m["r"], n["w"], b["w"], m["w"] }' "$work/trace"
  done
else
  echo "# strace is not installed: no system-call counts"
fi
