#!/bin/bash
# Session 14, fourth device call: g1 = f1 (4e8ca07) with the tile form of the fused reduce+encode
# and the reduction's group loops over k = 0..3; the owner's kernels of both, alternating.
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
R=$OUT/r; mkdir -p "$R"
pack() { tar czf "$OUT/results.tgz" -C "$R" . ; }
use() { export LD_LIBRARY_PATH="$here/variants/$1:$here/lib"; export OCTET_CUDA_LIBRARY="$here/variants/$1/liboctet_cuda.so.0.1.0"; }
use g1
for t in octet_cuda_test octet_cuda_kernel_test; do
  timeout 120 bin/$t > "$R/test_g1_$t.log" 2>&1; echo "g1 $t rc=$? $(grep -E '^\[  (PASSED|FAILED) +\]' "$R/test_g1_$t.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED' "$R/test_g1_$t.log" | head -5
done
pack
for round in 1 2; do
  for v in f1 g1; do
    use $v
    timeout 100 bin/octet_cuda_kernel_bench --benchmark_min_time=0.05 --benchmark_filter='n:(8388608|67108864)/type:./ranks:(4|8)/' \
      --benchmark_out="$R/kernel_${v}_$round.json" --benchmark_out_format=json > "$R/kernel_${v}_$round.txt" 2>&1
    grep -E '^BM_' "$R/kernel_${v}_$round.txt" | awk -v v=$v '{print v, $1, $2, $3, $NF}' | sed 's@/manual_time@@'
  done
  pack
done
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
use g1
for t in octet_cuda_kernel_test octet_cuda_test; do
  timeout 150 "$SAN" --tool memcheck --error-exitcode 3 bin/$t > "$R/memcheck_g1_$t.log" 2>&1
  echo "memcheck g1 $t rc=$? $(grep 'ERROR SUMMARY' "$R/memcheck_g1_$t.log")"
  pack
done
