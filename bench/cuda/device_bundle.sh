#!/bin/bash
# Packs the GPU tests and benchmarks of a build, with every shared library they load that is not
# the C library or the CUDA driver, into one folder that runs on a machine with a GPU but without
# Debian's packages (the `device` machine of docs/performance.md). The folder's run.sh runs them.
#
#   bench/cuda/device_bundle.sh BUILD_DIR OUT_DIR [NAME=LIB ...]   # here, after building
#   OUT_DIR/run.sh [tests|bench|memcheck|nccl|all]                  # there: $OUT/gpu-results.tgz
#   VARIANT=NAME OUT_DIR/run.sh ...                                 # with variant NAME's library
#
# NAME=LIB puts another build's liboctet_cuda.so.X.Y.Z (a kernel variant, built from the same
# sources but for the kernels) into OUT_DIR/variants/NAME/, so that one device call can compare
# variants with the same programs. octet_cuda_test and octet_cuda_bench load the variant;
# octet_cuda_kernel_test and octet_cuda_kernel_bench compile the bundled build's kernels in.
set -euo pipefail
usage="usage: device_bundle.sh BUILD_DIR OUT_DIR [NAME=LIB ...]"
build=${1:?$usage}
out=${2:?$usage}
shift 2
programs=(tests/cuda/octet_cuda_test tests/cuda/octet_cuda_kernel_test
          tests/cuda/octet_cuda_emulation_test bench/cuda/octet_cuda_bench
          bench/cuda/octet_cuda_kernel_bench)
for p in "${programs[@]}"; do
  [[ -x $build/$p ]] || { echo "device_bundle.sh: $build/$p is missing (build it with CUDA)" >&2; exit 1; }
done
cuda_lib=$(ls "$build"/lib/liboctet_cuda.so.*.*.* 2>/dev/null | head -1)
[[ -n $cuda_lib ]] || { echo "device_bundle.sh: no liboctet_cuda in $build/lib" >&2; exit 1; }

rm -rf "$out.partial"
mkdir -p "$out.partial/bin" "$out.partial/lib"
for p in "${programs[@]}"; do cp "$build/$p" "$out.partial/bin/"; done
cp -P "$build"/lib/liboctet*.so* "$out.partial/lib/"
# Every library the programs and liboctet_cuda resolve to here, but the C library's own (the
# target's must do) and the driver's (it comes with the GPU).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda\.so|libnvidia)'
for f in "$out.partial"/bin/* "$cuda_lib"; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] || cp -L "$path" "$out.partial/lib/$name"
done

for variant in "$@"; do
  name=${variant%%=*}
  lib=${variant#*=}
  [[ $name =~ ^[A-Za-z0-9_.-]+$ && $name != "$variant" && -f $lib ]] ||
    { echo "device_bundle.sh: '$variant' is not NAME=LIB with an existing LIB" >&2; exit 1; }
  mkdir -p "$out.partial/variants/$name"
  file=$(basename "$cuda_lib")  # liboctet_cuda.so.X.Y.Z, linked as liboctet_cuda.so.X
  cp "$lib" "$out.partial/variants/$name/$file"
  ln -s "$file" "$out.partial/variants/$name/${file%.*.*}"
done
cp "$(dirname "$0")/nccl_hostid_probe.py" "$out.partial/"
cat > "$out.partial/run.sh" <<'RUN'
#!/bin/bash
# Runs the bundled GPU checks: tests, bench, memcheck (compute-sanitizer on the two GPU test
# programs), nccl (can two NCCL ranks share this GPU?), or all of them (the default). Prints a
# summary; every log, gtest XML and benchmark JSON goes into one archive, $OUT/gpu-results.tgz
# (else ./gpu-results.tgz beside this script). Exits non-zero if a test failed.
#   MIN_TIME (default 0.05): --benchmark_min_time of both benchmarks
#   KFILTER: octet_cuda_kernel_bench's --benchmark_filter (default: 32 and 256 MiB, 4 ranks)
#   VARIANT: the name of a library in variants/ (device_bundle.sh NAME=LIB) to test instead of
#     the bundled one (the kernel test and benchmark keep the bundled kernels, compiled in)
here=$(cd "$(dirname "$0")" && pwd)
libs="$here/lib"
if [[ -n ${VARIANT:-} ]]; then
  [[ -d $here/variants/$VARIANT ]] || { echo "run.sh: no variant '$VARIANT' in $here/variants" >&2; exit 2; }
  libs="$here/variants/$VARIANT:$libs"
fi
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OCTET_CUDA_LIBRARY=$(ls "${libs%%:*}"/liboctet_cuda.so.*.*.* | head -1)
echo "library: $OCTET_CUDA_LIBRARY"
res=$(mktemp -d)
what=${1:-all}
mt=${MIN_TIME:-0.05}
status=0
want() { [[ $what == all || $what == "$1" ]]; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$res/gpu.txt" 2>&1 ||
  echo "no nvidia-smi" > "$res/gpu.txt"
cat "$res/gpu.txt"
if want tests; then
  for t in octet_cuda_test octet_cuda_kernel_test octet_cuda_emulation_test; do
    "$here/bin/$t" --gtest_output="xml:$res/$t.xml" > "$res/$t.log" 2>&1 || status=1
    echo "$t: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$res/$t.log" | tr '\n' ' ')"
  done
fi
if want bench; then
  "$here/bin/octet_cuda_bench" --benchmark_min_time="$mt" --benchmark_counters_tabular=true \
    --benchmark_out="$res/octet_cuda_bench.json" --benchmark_out_format=json \
    > "$res/octet_cuda_bench.txt" 2>&1 || status=1
  "$here/bin/octet_cuda_kernel_bench" --benchmark_min_time="$mt" --benchmark_counters_tabular=true \
    --benchmark_filter="${KFILTER:-n:(8388608|67108864)/type:./ranks:4/}" \
    --benchmark_out="$res/octet_cuda_kernel_bench.json" --benchmark_out_format=json \
    > "$res/octet_cuda_kernel_bench.txt" 2>&1 || status=1
  # name, time, fp32 GB/s, copy GB/s (read + written), codec time / copy time
  grep -hE '^BM_' "$res/octet_cuda_bench.txt" "$res/octet_cuda_kernel_bench.txt" |
    sed -E 's@/(real|manual)_time@@' | awk '{print $1, $2, $3, $8, $9, $10}'
fi
if want memcheck; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for t in octet_cuda_test octet_cuda_kernel_test; do
    "$sanitizer" --tool memcheck --error-exitcode 3 "$here/bin/$t" > "$res/memcheck_$t.log" 2>&1 ||
      status=1
    echo "memcheck $t: $(grep -E 'ERROR SUMMARY' "$res/memcheck_$t.log")"
  done
fi
if want nccl; then
  for mode in same distinct; do
    PYTHONUNBUFFERED=1 timeout 120 python3 "$here/nccl_hostid_probe.py" "$mode" 2 \
      > "$res/nccl_$mode.log" 2>&1
    grep -E '^(same|distinct) rank' "$res/nccl_$mode.log"
  done
fi
mkdir -p "${OUT:-$here}"
tar czf "${OUT:-$here}/gpu-results.tgz" -C "$res" .
rm -rf "$res"
exit $status
RUN
chmod +x "$out.partial/run.sh"
rm -rf "$out"
mv "$out.partial" "$out"
echo "device_bundle.sh: $out ($(du -sh "$out" | cut -f1)); run $out/run.sh there"
