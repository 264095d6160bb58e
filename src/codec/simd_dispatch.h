// The SIMD kernels with Highway's runtime dispatch, split by what they do: simd_encode.cc
// (stats, nearest and stochastic encode), simd_decode.cc (decode), simd.cc (the choice of target
// and the BlockKernels table of them all). Each function runs the target simd_target_index()
// names: $OCTET_SIMD_TARGET's, or Highway's own choice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/block_kernels.h"

namespace octet {
namespace codec {

// The dispatch tables' index of the target $OCTET_SIMD_TARGET names, 0 for Highway's choice. The
// tables of every file agree: all three are compiled for the same targets (CMakeLists.txt).
size_t simd_target_index();

// simd_encode.cc
BlockStats simd_stats(const float* x, size_t n);
void simd_encode_nearest(const detail::QuantTable& t, const float* x, size_t n,
                         const detail::BlockScale& s, uint8_t* codes);
void simd_encode_stochastic(const detail::QuantTable& t, const float* x, size_t n,
                            const detail::BlockScale& s, uint64_t seed, uint64_t first_index,
                            uint8_t* codes);
void simd_encode_blocks(const EncodeJob& job, uint64_t b0, uint64_t b1);

// simd_decode.cc
void simd_decode(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                 const uint8_t* scales, float* out, bool accumulate);
void simd_decode_stream(const detail::QuantTable& t, const uint8_t* codes, size_t n, uint32_t block,
                        const uint8_t* scales, float* out);
void simd_fence();

}  // namespace codec
}  // namespace octet

// FUNC's entry for the chosen target, in a file that HWY_EXPORTs FUNC: Highway's dynamic dispatch
// (which tests narrow with hwy::SetSupportedTargetsForTest), or the entry of the target
// $OCTET_SIMD_TARGET names.
#define OCTET_DISPATCH(FUNC)                \
  (::octet::codec::simd_target_index() == 0 \
       ? HWY_DYNAMIC_DISPATCH(FUNC)         \
       : *HWY_DISPATCH_TABLE(FUNC)[::octet::codec::simd_target_index()])
