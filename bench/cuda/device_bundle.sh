#!/bin/bash
# Packs the GPU tests and benchmarks of a build, with every shared library they load that is not
# the C library or the CUDA driver, into one folder that runs on a machine with a GPU but without
# Debian's packages (the `device` machine of docs/performance.md). The folder's run.sh runs them.
#
#   bench/cuda/device_bundle.sh BUILD_DIR OUT_DIR      # here, after building BUILD_DIR
#   OUT_DIR/run.sh [tests|bench|all]                   # there; results in $OUT (else OUT_DIR/out)
set -euo pipefail
build=${1:?usage: device_bundle.sh BUILD_DIR OUT_DIR}
out=${2:?usage: device_bundle.sh BUILD_DIR OUT_DIR}
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

cat > "$out.partial/run.sh" <<'RUN'
#!/bin/bash
# Runs the bundled GPU tests (tests), benchmarks (bench) or both (all, the default); every log in
# $OUT (else ./out beside this script). Exits non-zero if a test failed.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OCTET_CUDA_LIBRARY=$(ls "$here"/lib/liboctet_cuda.so.*.*.* | head -1)
out=${OUT:-$here/out}
mkdir -p "$out"
what=${1:-all}
status=0
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
if [[ $what == tests || $what == all ]]; then
  for t in octet_cuda_test octet_cuda_kernel_test octet_cuda_emulation_test; do
    "$here/bin/$t" --gtest_output="xml:$out/$t.xml" > "$out/$t.log" 2>&1 || status=1
    echo "$t: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$out/$t.log" | tr '\n' ' ')"
  done
fi
if [[ $what == bench || $what == all ]]; then
  for b in octet_cuda_bench octet_cuda_kernel_bench; do
    "$here/bin/$b" --benchmark_counters_tabular=true --benchmark_out="$out/$b.json" \
      --benchmark_out_format=json > "$out/$b.txt" 2>&1 || status=1
    cat "$out/$b.txt"
  done
fi
exit $status
RUN
chmod +x "$out.partial/run.sh"
rm -rf "$out"
mv "$out.partial" "$out"
echo "device_bundle.sh: $out ($(du -sh "$out" | cut -f1)); run $out/run.sh there"
