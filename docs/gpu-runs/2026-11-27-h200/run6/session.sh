#!/bin/bash
# Session 14, third device call: f0 = 5c8a969 (encode_tile reading each block twice), f1 = f0 with
# a plain path for finite blocks of unscaled range (no NaN/Inf check, one multiply); v0 = e162a83.
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
R=$OUT/r; mkdir -p "$R"
pack() { tar czf "$OUT/results.tgz" -C "$R" . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$R/gpu.txt" 2>&1
use() { export LD_LIBRARY_PATH="$here/variants/$1:$here/lib"; export OCTET_CUDA_LIBRARY="$here/variants/$1/liboctet_cuda.so.0.1.0"; }
for v in f1 f0; do
  use $v
  for t in octet_cuda_test octet_cuda_kernel_test; do
    timeout 120 bin/$t > "$R/test_${v}_$t.log" 2>&1; echo "$v $t rc=$? $(grep -E '^\[  (PASSED|FAILED) +\]' "$R/test_${v}_$t.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED' "$R/test_${v}_$t.log" | head -5
  done
done
pack
F='BM_EncodeAsync/n:(8388608|67108864)/type:./sr_or_acc:.'
for round in 1 2; do
  for v in v0 f0 f1; do
    use $v
    timeout 60 bin/octet_cuda_bench --benchmark_filter="$F" --benchmark_min_time=0.05 \
      --benchmark_out="$R/enc_${v}_$round.json" --benchmark_out_format=json > "$R/enc_${v}_$round.txt" 2>&1
    grep -E '^BM_' "$R/enc_${v}_$round.txt" | awk -v v=$v '{print v, $1, $2, $3, $NF}' | sed 's@/real_time@@'
  done
done
pack
use f1
timeout 120 bin/octet_cuda_bench --benchmark_min_time=0.05 --benchmark_out="$R/all_f1.json" \
  --benchmark_out_format=json > "$R/all_f1.txt" 2>&1
grep -E '^BM_(Encode|Decode)' "$R/all_f1.txt" | awk '{print "f1", $1, $2, $3, $NF}' | sed 's@/real_time@@'
timeout 120 bin/octet_cuda_kernel_bench --benchmark_min_time=0.05 --benchmark_filter='n:(8388608|67108864)/type:./ranks:4/' \
  --benchmark_out="$R/kernel_f1.json" --benchmark_out_format=json > "$R/kernel_f1.txt" 2>&1
grep -E '^BM_' "$R/kernel_f1.txt" | awk '{print "f1", $1, $2, $3, $NF}' | sed 's@/manual_time@@'
pack
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for v in f1 f0; do
  use $v
  for t in octet_cuda_test octet_cuda_kernel_test; do
    timeout 150 "$SAN" --tool memcheck --error-exitcode 3 bin/$t > "$R/memcheck_${v}_$t.log" 2>&1
    echo "memcheck $v $t rc=$? $(grep 'ERROR SUMMARY' "$R/memcheck_${v}_$t.log")"
  done
  pack
done
