#!/bin/bash
# device_bundle.sh NAME=LIB and run.sh's VARIANT: a variant library (here the build's own under
# another name) is bundled with its soname link and tested in place of the bundled one; an
# unknown VARIANT is refused. Usage: device_bundle_variant_test.sh BUILD_DIR LIB WORK_DIR
set -euo pipefail
build=$1 lib=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
"$here/../../bench/cuda/device_bundle.sh" "$build" "$work/bundle" same="$lib"
file=$(basename "$lib")
[[ -f $work/bundle/variants/same/$file && -L $work/bundle/variants/same/${file%.*.*} ]]
# One emulation case is enough here: cuda_device_bundle runs them all.
GTEST_FILTER='KernelEmulation.DecodeMatchesCpu' VARIANT=same OUT="$work/out" \
  "$work/bundle/run.sh" tests | tee "$work/run.txt"
grep -q "^library: $work/bundle/variants/same/$file\$" "$work/run.txt"
grep -q 'octet_cuda_emulation_test: \[  PASSED  \] 1 test' "$work/run.txt"
if VARIANT=none "$work/bundle/run.sh" tests; then
  echo "run.sh accepted an unknown variant" >&2
  exit 1
fi
echo "device bundle variant: ok"
