#!/usr/bin/env bash
# Sets up an emulated cluster, runs the fp32-vs-Octet comparison on it, and always tears it down.
#
#   measure.sh [-B BUILD_DIR] [-n RANKS] [-r RATE] [-o OUT_DIR] [-s SIZES] [ONLY...]
#
#   -B  build tree with allreduce_plain, octet and liboctet_pmpi.so (default: <repo>/build)
#   -n  ranks = hosts, one rank per host (default 4);  -r  link rate (default 1gbit)
#   -o  where each run's output is saved (default /tmp/octet-cluster-results)
#   -s  "MIN MAX" message sizes for allreduce_plain (default "1M 64M")
#   ONLY  a subset of: ring default octet shim (default: all)
#
# ring    allreduce_plain, OpenMPI's ring allreduce pinned: the fp32 baseline to beat
# default allreduce_plain, OpenMPI's default algorithm choice
# octet   `octet bench allreduce` (fp32 MPI vs compressed, per size); extra arguments from
#         OCTET_BENCH_ARGS
# shim    allreduce_plain with liboctet_pmpi.so preloaded: once with OCTET_ENABLE=0 (exact
#         results required), once with OCTET_ENABLE=1 plus OCTET_SHIM_ENV (e.g.
#         "OCTET_MIN_BYTES=65536 OCTET_TYPE=linear"), error tolerance OCTET_SHIM_TOL (default
#         0.05), the shim's JSON report in OUT_DIR/shim-report.json
# A run whose tool was not built is reported as skipped, not failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
emulate=$here/emulate.sh
build=$repo/build
ranks=4
rate=1gbit
out=/tmp/octet-cluster-results
sizes="1M 64M"
ring_mca=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4)

while getopts "B:n:r:o:s:h" opt; do
  case $opt in
    B) build=$(cd "$OPTARG" && pwd) || exit 1 ;;
    n) ranks=$OPTARG ;;
    r) rate=$OPTARG ;;
    o) out=$OPTARG ;;
    s) sizes=$OPTARG ;;
    h) sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' && exit 0 ;;
    *) exit 1 ;;
  esac
done
shift $((OPTIND - 1))
only=${*:-ring default octet shim}
read -r size_min size_max <<<"$sizes"
plain=$build/bench/cluster/allreduce_plain
octet=$build/src/cli/octet
shim=$build/plugins/pmpi/liboctet_pmpi.so

[[ -x $plain ]] || { echo "measure.sh: build allreduce_plain first ($plain)" >&2; exit 1; }
mkdir -p "$out"
trap '"$emulate" down' EXIT
trap 'exit 130' INT TERM
"$emulate" up "$ranks" "$rate" || exit 1

# run NAME ARGS...: one mpirun across the cluster, its output kept in $out/NAME.txt.
run() {
  local name=$1 rc
  shift
  {
    echo "# $(date -u +%FT%TZ) $ranks ranks at $rate;" \
      "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# emulate.sh run -- -np $ranks $*"
  } >"$out/$name.txt"
  # A hung launch must not hang the whole measurement (OCTET_CLUSTER_RUN_TIMEOUT seconds).
  timeout "${OCTET_CLUSTER_RUN_TIMEOUT:-900}" "$emulate" run -- -np "$ranks" "$@" 2>&1 |
    grep -v 'setpgid' | tee -a "$out/$name.txt"
  rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc, saved in $out/$name.txt"
  return "$rc"
}

plain_args=(-b "$size_min" -e "$size_max" -f 4)
status=0
for what in $only; do
  echo "== $what"
  case $what in
    ring) run fp32-ring "${ring_mca[@]}" "$plain" "${plain_args[@]}" || status=1 ;;
    default) run fp32-default "$plain" "${plain_args[@]}" || status=1 ;;
    octet)
      if "$octet" bench allreduce --help >/dev/null 2>&1; then
        # shellcheck disable=SC2086  # OCTET_BENCH_ARGS is a list of words on purpose
        run octet-bench "${ring_mca[@]}" "$octet" bench allreduce ${OCTET_BENCH_ARGS:-} || status=1
      else
        echo "skipped: '$octet bench allreduce' is not available in this build"
      fi
      ;;
    shim)
      if [[ -f $shim ]]; then
        # Preloaded but disabled: what merely interposing costs; exact results required.
        run shim-disabled "${ring_mca[@]}" -x LD_PRELOAD="$shim" -x OCTET_ENABLE=0 \
          "$plain" "${plain_args[@]}" || status=1
        env_args=(-x LD_PRELOAD="$shim" -x OCTET_ENABLE=1 -x OCTET_REPORT="$out/shim-report.json")
        for kv in ${OCTET_SHIM_ENV:-}; do env_args+=(-x "$kv"); done
        run shim-ring "${ring_mca[@]}" "${env_args[@]}" "$plain" "${plain_args[@]}" \
          -t "${OCTET_SHIM_TOL:-0.05}" || status=1
      else
        echo "skipped: $shim is not built"
      fi
      ;;
    *) echo "measure.sh: unknown run '$what'" >&2 && status=1 ;;
  esac
done
exit $status
