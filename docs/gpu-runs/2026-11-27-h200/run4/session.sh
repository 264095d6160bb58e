#!/bin/bash
# Session 14's device call: HEAD's tests, memcheck and benchmarks (run.sh), then 815fd98's
# butterfly encode_tile (bf/liboctet_cuda) against HEAD's in the same call, then ncu stall reasons.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
R=$OUT/r; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$R/gpu.txt" 2>&1
date -u +%FT%TZ > "$R/start.txt"
for w in tests memcheck bench; do
  mkdir -p "$R/head_$w"
  OUT="$R/head_$w" timeout 200 ./run.sh "$w" > "$R/head_$w.txt" 2>&1; echo "run.sh $w rc=$?" >> "$R/head_$w.txt"
  cat "$R/head_$w.txt"
done
export LD_LIBRARY_PATH="$here/lib"
HEADLIB=$(ls "$here"/lib/liboctet_cuda.so.*.*.* | head -1)
BFLIB="$here/bf/liboctet_cuda.so.0.1.0"
echo "== butterfly tests"
OCTET_CUDA_LIBRARY=$BFLIB timeout 120 bin/octet_cuda_test > "$R/bf_test.log" 2>&1; echo "bf test rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|FAILED ' "$R/bf_test.log" | head
echo "== encode: head vs butterfly, interleaved"
F='BM_EncodeAsync/n:(8388608|67108864)/type:./sr_or_acc:0'
for i in 1 2 3; do
  for v in head bf; do
    lib=$HEADLIB; [[ $v == bf ]] && lib=$BFLIB
    OCTET_CUDA_LIBRARY=$lib timeout 60 bin/octet_cuda_bench --benchmark_filter="$F" --benchmark_min_time=0.1 \
      --benchmark_out="$R/enc_${v}_$i.json" --benchmark_out_format=json > "$R/enc_${v}_$i.txt" 2>&1
    grep -E '^BM_' "$R/enc_${v}_$i.txt" | awk -v v=$v '{print v, $1, $2, $3, $NF}'
  done
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in head bf; do
  lib=$HEADLIB; [[ $v == bf ]] && lib=$BFLIB
  for t in 1 6; do
    OCTET_CUDA_LIBRARY=$lib timeout 90 "$NCU" --section WarpStateStats --section SpeedOfLight --section Occupancy \
      --section LaunchStats -k regex:encode_tile_kernel -c 1 bin/octet_cuda_bench \
      --benchmark_filter="BM_EncodeAsync/n:67108864/type:$t/sr_or_acc:0" --benchmark_min_time=0.01 \
      > "$R/ncu_${v}_type$t.txt" 2>&1
    echo "ncu $v type $t rc=$?"
  done
done
date -u +%FT%TZ > "$R/end.txt"
