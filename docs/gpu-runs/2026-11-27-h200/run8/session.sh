#!/bin/bash
# Session 14, fifth device call: b56529b as bundled (launch_reduce_encode routed through the
# gated tile encode), by the bundle's own run.sh (tests, memcheck), then the kernel benchmark.
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
R=$OUT/r; mkdir -p "$R"
pack() { tar czf "$OUT/results.tgz" -C "$R" . ; }
for w in tests memcheck; do
  mkdir -p "$R/$w"; OUT="$R/$w" timeout 150 ./run.sh $w > "$R/run_$w.txt" 2>&1; echo "run.sh $w rc=$?"; cat "$R/run_$w.txt"; pack
done
export LD_LIBRARY_PATH="$here/lib"
timeout 100 bin/octet_cuda_kernel_bench --benchmark_min_time=0.05 --benchmark_filter='n:(8388608|67108864)/type:./ranks:4/' \
  --benchmark_out="$R/kernel.json" --benchmark_out_format=json > "$R/kernel.txt" 2>&1
grep -E '^BM_' "$R/kernel.txt" | awk '{print $1, $2, $3, $NF}' | sed 's@/manual_time@@'
pack
