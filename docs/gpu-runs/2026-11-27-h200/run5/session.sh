#!/bin/bash
# Session 14, second device call: the blocking decode's device check (v0 = e162a83's library),
# and four encode variants against it: v1 fast tile stats (fmaxf/fminf, whole tile in registers),
# r4/r8/r16 the tile read twice (stats, then codes) with 4/8/16 rows unrolled.
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
R=$OUT/r; mkdir -p "$R"
pack() { tar czf "$OUT/results.tgz" -C "$R" . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$R/gpu.txt" 2>&1
use() { export LD_LIBRARY_PATH="$here/variants/$1:$here/lib"; export OCTET_CUDA_LIBRARY="$here/variants/$1/liboctet_cuda.so.0.1.0"; }
for v in v0 r4; do
  use $v
  for t in octet_cuda_test octet_cuda_kernel_test; do
    timeout 120 bin/$t > "$R/test_${v}_$t.log" 2>&1; echo "$v $t rc=$? $(grep -E '^\[  (PASSED|FAILED) +\]' "$R/test_${v}_$t.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED' "$R/test_${v}_$t.log" | head -5
  done
done
pack
F='BM_EncodeAsync/n:(8388608|67108864)/type:./sr_or_acc:.'
for round in 1 2; do
  for v in v0 v1 r4 r8 r16; do
    use $v
    timeout 60 bin/octet_cuda_bench --benchmark_filter="$F" --benchmark_min_time=0.05 \
      --benchmark_out="$R/enc_${v}_$round.json" --benchmark_out_format=json > "$R/enc_${v}_$round.txt" 2>&1
    grep -E '^BM_' "$R/enc_${v}_$round.txt" | awk -v v=$v '{print v, $1, $2, $3, $NF}' | sed 's@/real_time@@'
  done
done
pack
for v in v0 r4; do
  use $v
  timeout 90 bin/octet_cuda_bench --benchmark_filter='BM_Decode' --benchmark_min_time=0.05 \
    --benchmark_out="$R/dec_$v.json" --benchmark_out_format=json > "$R/dec_$v.txt" 2>&1
  grep -E '^BM_Decode.*n:(8388608|67108864)' "$R/dec_$v.txt" | awk -v v=$v '{print v, $1, $2, $3, $NF}' | sed 's@/real_time@@'
done
pack
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
use r4
for t in 1 6; do
  timeout 60 "$NCU" --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
    -k regex:encode_tile_kernel -c 1 bin/octet_cuda_bench --benchmark_filter="BM_EncodeAsync/n:67108864/type:$t/sr_or_acc:0" \
    --benchmark_min_time=0.01 > "$R/ncu_r4_type$t.txt" 2>&1; echo "ncu r4 type $t rc=$?"
  grep -E "Duration|Registers Per|Achieved Occupancy|DRAM Throughput|Compute \(SM\)" "$R/ncu_r4_type$t.txt"
done
pack
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in octet_cuda_test octet_cuda_kernel_test; do
  timeout 150 "$SAN" --tool memcheck --error-exitcode 3 bin/$t > "$R/memcheck_r4_$t.log" 2>&1
  echo "memcheck r4 $t rc=$? $(grep 'ERROR SUMMARY' "$R/memcheck_r4_$t.log")"
done
pack
