// The SIMD kernels' runtime dispatch: which Highway target runs (Highway's choice, or the one
// $OCTET_SIMD_TARGET names), the targets this CPU and build can run, and the BlockKernels table of
// the kernels of simd_encode.cc and simd_decode.cc (simd_dispatch.h).
#include <cstdlib>
#include <string>
#include <vector>

#include "codec/block_kernels.h"
#include "codec/simd_dispatch.h"
#include "octet/error.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace octet {
namespace codec {
namespace HWY_NAMESPACE {

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace codec
}  // namespace octet
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace octet {
namespace codec {

HWY_EXPORT(TargetName);

namespace {

// $OCTET_SIMD_TARGET, read once: the one target the codec runs (as simd_target() names it), so
// that one machine also runs what CPUs without its widest extensions run. Empty or unset: Highway's
// choice. A name this CPU and build lack is an error at every codec call (simd_kernels()).
struct TargetChoice {
  size_t index = 0;   // in the dispatch tables; 0: Highway's choice
  std::string error;  // not empty: the variable names no target here
};

// The dispatch tables' index for a dispatch restricted to `bit`: that target's entries, or the
// scalar ones where this file was not compiled for it (Highway's fallback).
size_t entry_index(int64_t bit) {
  hwy::ChosenTarget chosen;
  chosen.Update(bit);
  return chosen.GetIndex();
}

struct Target {
  std::string name;
  size_t index;
};

// The targets this CPU has and this file was compiled for, best first.
std::vector<Target> runnable_targets() {
  std::vector<Target> targets;
  const uint64_t supported = static_cast<uint64_t>(hwy::SupportedTargets());
  for (uint64_t bits = supported; bits != 0; bits &= bits - 1) {
    const int64_t bit = static_cast<int64_t>(bits & (~bits + 1));
    const size_t index = entry_index(bit);
    const std::string name = (*HWY_DISPATCH_TABLE(TargetName)[index])();
    if (name == hwy::TargetName(bit)) targets.push_back({name, index});
  }
  return targets;
}

TargetChoice choose_target() {
  TargetChoice c;
  const char* want = std::getenv("OCTET_SIMD_TARGET");
  if (want == nullptr || *want == '\0') return c;
  std::string have;
  for (const Target& t : runnable_targets()) {
    if (t.name == want) {
      c.index = t.index;
      return c;
    }
    have += (have.empty() ? "" : " ") + t.name;
  }
  c.error = std::string("OCTET_SIMD_TARGET=") + want +
            ": not a SIMD target of this CPU and build (it has " + have + ")";
  return c;
}

const TargetChoice& target_choice() {
  static const TargetChoice c = choose_target();
  return c;
}

}  // namespace

size_t simd_target_index() {
  return target_choice().index;
}

const BlockKernels& simd_kernels() {
  static const BlockKernels k{simd_stats,        simd_encode_nearest, simd_encode_stochastic,
                              simd_decode,       simd_decode_stream,  simd_fence,
                              simd_encode_blocks};
  if (!target_choice().error.empty())
    throw Error(ErrorCode::kInvalidArgument, target_choice().error);
  return k;
}

std::vector<std::string> simd_target_names() {
  std::vector<std::string> names;
  for (const Target& t : runnable_targets()) names.push_back(t.name);
  return names;
}

const char* simd_target_name() {
  if (!target_choice().error.empty())
    throw Error(ErrorCode::kInvalidArgument, target_choice().error);
  return OCTET_DISPATCH(TargetName)();
}

}  // namespace codec
}  // namespace octet
#endif  // HWY_ONCE
