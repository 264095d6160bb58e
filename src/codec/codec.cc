// Encode/decode orchestration: options, block loop (multi-threaded on a worker pool), payload
// sections.
#include "octet/codec.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "codec/backend.h"
#include "codec/block_kernels.h"
#include "codec/encode_blocks.h"
#include "codec/payload.h"
#include "codec/tables.h"
#include "codec/worker_pool.h"

namespace octet {
namespace codec {
namespace {

std::atomic<bool> g_force_scalar{false};

const BlockKernels& kernels() {
  return g_force_scalar.load(std::memory_order_relaxed) ? scalar_kernels() : simd_kernels();
}

// Below this many elements per thread, extra threads cost more than they save.
constexpr size_t kMinElementsPerThread = size_t{1} << 18;

int thread_count(int requested, uint64_t count, uint64_t blocks) {
  if (requested == 1 || blocks < 2) return 1;
  const int hw = hardware_threads();
  uint64_t n = requested > 0 ? static_cast<uint64_t>(requested) : static_cast<uint64_t>(hw);
  if (requested <= 0) n = std::min<uint64_t>(n, count / kMinElementsPerThread);
  return static_cast<int>(std::max<uint64_t>(1, std::min<uint64_t>(n, blocks)));
}

// Runs fn(first_block, end_block) over `threads` contiguous ranges of blocks, on the worker pool.
// The ranges depend on `threads` alone, not on which thread runs which, so the bytes do not either.
// One thread never touches the pool (no lock, no wakeup): small tensors cost what they cost
// single-threaded.
template <typename Fn>
void for_block_ranges(uint64_t blocks, int threads, Fn fn) {
  if (threads <= 1) {
    fn(uint64_t{0}, blocks);
    return;
  }
  const uint64_t per = (blocks + threads - 1) / threads;
  auto range = [&](int t) { fn(std::min(blocks, per * t), std::min(blocks, per * (t + 1))); };
  WorkerPool::instance().run(threads, range);
}

void set_code(uint8_t* codes, int bits, size_t i, uint32_t code) {
  if (bits == 8) {
    codes[i] = static_cast<uint8_t>(code);
  } else {
    const int sh = (i & 1) ? 4 : 0;
    codes[i / 2] = static_cast<uint8_t>((codes[i / 2] & ~(0xF << sh)) | (code << sh));
  }
}

void unpack_nibbles(const uint8_t* packed, size_t n, uint8_t* nibbles) {
  for (size_t j = 0; j < n / 2; ++j) {
    nibbles[2 * j] = packed[j] & 0xF;
    nibbles[2 * j + 1] = packed[j] >> 4;
  }
  if (n & 1) nibbles[n - 1] = packed[n / 2] & 0xF;
}

// Writes the special section; non-finite elements get kNonFiniteCode so every path emits the same
// bytes.
uint8_t* write_special(const EncodeJob& job, uint8_t* out, size_t entry_bytes) {
  for (uint64_t b = 0; b < job.special->size(); ++b) {
    if (!(*job.special)[b]) continue;
    store_u32(out, static_cast<uint32_t>(b));
    uint8_t* classes = out + 4;
    std::memset(classes, 0, entry_bytes - 4);
    const uint64_t first = b * job.block;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(job.block, job.count - first));
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, job.in + first + i, sizeof v);
      const uint32_t c = detail::special_class(v);
      if (c == detail::kClassFinite) continue;
      classes[i / 4] =
          static_cast<uint8_t>(classes[i / 4] | (c << (detail::kSpecialClassBits * (i % 4))));
      set_code(job.codes, job.bits, first + i, detail::kNonFiniteCode);
    }
    out += entry_bytes;
  }
  return out;
}

void apply_special(const uint8_t* p, const PayloadInfo& info, const Layout& l, float* out,
                   DecodeMode mode) {
  for (uint32_t s = 0; s < info.special_blocks; ++s) {
    const uint8_t* entry = p + l.special + s * l.special_entry;
    const uint64_t first = uint64_t{load_u32(entry)} * info.block_size;
    const uint64_t n = std::min<uint64_t>(info.block_size, info.count - first);
    for (uint64_t i = 0; i < n; ++i) {
      const uint32_t c = detail::special_class_at(entry + 4, static_cast<uint32_t>(i));
      if (c == detail::kClassFinite) continue;
      float v = detail::bits_float(detail::special_value_bits(c));
      if (mode == DecodeMode::kAccumulate) {
        float o;
        std::memcpy(&o, out + first + i, sizeof o);
        v = o + v;
      }
      std::memcpy(out + first + i, &v, sizeof v);
    }
  }
}

void decode_blocks(const detail::QuantTable& t, const uint8_t* p, const PayloadInfo& info,
                   const Layout& l, float* out, DecodeMode mode, uint64_t b0, uint64_t b1) {
  const BlockKernels& k = kernels();
  const int bits = static_cast<int>(t.bits);
  const bool stream = mode == DecodeMode::kOverwrite && 4 * info.count >= streaming_decode_bytes();
  const bool accumulate = mode == DecodeMode::kAccumulate;
  const uint32_t block = info.block_size;
  // 8-bit codes go to the kernel as one run of blocks; 4-bit ones block by block, unpacked.
  const uint64_t step = bits == 8 ? b1 - b0 : 1;
  std::vector<uint8_t> nibbles(bits == 4 ? block : 0);
  for (uint64_t b = b0; b < b1; b += step) {
    const uint64_t first = b * block;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(step * block, info.count - first));
    const uint8_t* codes = p + l.codes + (bits == 8 ? first : first / 2);
    if (bits == 4) {
      unpack_nibbles(codes, n, nibbles.data());
      codes = nibbles.data();
    }
    const uint8_t* scales = p + l.scales + 4 * b;
    if (stream)
      k.decode_stream(t, codes, n, block, scales, out + first);
    else
      k.decode(t, codes, n, block, scales, out + first, accumulate);
  }
  if (stream) k.fence();  // before this thread's range is handed back (and apply_special)
}

}  // namespace
}  // namespace codec

namespace codec {

namespace {
// The size of the last-level cache that cpu0 shares, from sysfs ("32768K"), or 0. (The C library's
// sysconf figure can be a whole socket's, several times what one core's group of cores shares.)
uint64_t shared_cache_bytes() {
  for (int index = 3; index >= 2; --index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level(dir + "/level"), size(dir + "/size");
    int l = 0;
    uint64_t value = 0;
    std::string unit;
    if (!(level >> l) || l != index || !(size >> value)) continue;
    size >> unit;
    return unit == "K" ? value << 10 : unit == "M" ? value << 20 : value;
  }
  return 0;
}
}  // namespace

// From this output size an overwriting decode writes around the caches (decode_stream): the
// last-level cache cpu0 shares (32 MiB where it is not known), at least 8 MiB. Below it the output
// may still be in cache when the caller reads it; above it, it cannot be, and reading each output
// line before writing it only costs memory bandwidth (docs/performance.md, "Decode of outputs
// larger than the caches").
uint64_t streaming_decode_bytes() {
  static const uint64_t bytes = [] {
    const uint64_t known = shared_cache_bytes();
    return std::max<uint64_t>(known > 0 ? known : uint64_t{32} << 20, uint64_t{8} << 20);
  }();
  return bytes;
}

size_t encode_host(const ResolvedOptions& r, const float* in, size_t count, uint8_t* out,
                   size_t out_capacity) {
  const EncodePlan plan = plan_encode(r, in, count, out, out_capacity);
  const CodecOptions& o = r.options;
  std::vector<uint8_t> special(plan.base.blocks, 0);
  std::atomic<bool> mixed{false};
  const EncodeJob job{&quant_table(o.type, o.mantissa_exponent_offset),
                      &o,
                      in,
                      count,
                      r.block,
                      r.bits,
                      out + plan.base.scales,
                      out + plan.base.codes,
                      &special,
                      &mixed};
  const int threads = thread_count(o.threads, count, plan.base.blocks);
  for_block_ranges(plan.base.blocks, threads,
                   [&](uint64_t b0, uint64_t b1) { kernels().encode_blocks(job, b0, b1); });
  if (mixed)
    throw Error(ErrorCode::kInvalidArgument,
                "dynamic_unsigned needs blocks whose elements all have one sign");
  const uint32_t specials =
      static_cast<uint32_t>(std::count(special.begin(), special.end(), uint8_t{1}));
  const Layout l = finish_layout(plan, specials, out_capacity);
  write_special(job, out + l.special, l.special_entry);
  write_plan_header(out, plan, specials);
  if (o.checksum) store_u32(out + l.checksum, body_checksum(out, l));
  return l.size;
}

void decode_host(const uint8_t* p, size_t length, float* out, size_t count, DecodeMode mode,
                 int threads) {
  const PayloadInfo info = read_header(p, length);
  if (out == nullptr && count > 0) throw Error(ErrorCode::kInvalidArgument, "output is null");
  const Layout l = checked_layout(info, length, count);
  validate_body(p, info, l);
  const detail::QuantTable& t = quant_table(info.type, info.mantissa_exponent_offset);
  const int nt = thread_count(threads, info.count, l.blocks);
  for_block_ranges(l.blocks, nt, [&](uint64_t b0, uint64_t b1) {
    decode_blocks(t, p, info, l, out, mode, b0, b1);
  });
  apply_special(p, info, l, out, mode);
}

}  // namespace codec

size_t encode(const float* in, size_t count, const CodecOptions& o, uint8_t* out,
              size_t out_capacity) {
  return codec::encode_host(codec::resolve(o), in, count, out, out_capacity);
}

std::vector<uint8_t> encode(const std::vector<float>& in, const CodecOptions& o) {
  std::vector<uint8_t> out(max_encoded_size(in.size(), o));
  out.resize(encode(in.data(), in.size(), o, out.data(), out.size()));
  return out;
}

PayloadInfo inspect(const uint8_t* payload, size_t length) {
  return codec::read_header(payload, length);
}

void decode(const uint8_t* p, size_t length, float* out, size_t count, DecodeMode mode,
            int threads) {
  codec::decode_host(p, length, out, count, mode, threads);
}

std::vector<float> decode(const std::vector<uint8_t>& payload) {
  const PayloadInfo info = inspect(payload.data(), payload.size());
  std::vector<float> out(info.count);
  decode(payload.data(), payload.size(), out.data(), out.size());
  return out;
}

std::string simd_target() {
  return codec::simd_target_name();
}

std::vector<std::string> simd_targets() {
  return codec::simd_target_names();
}

namespace codec {

bool set_force_scalar(bool force) {
  return g_force_scalar.exchange(force);
}

namespace {

class HostBackend final : public CodecBackend {
 public:
  const char* name() const override { return "host"; }
  bool available(std::string*) const override { return true; }
  size_t encode(const ResolvedOptions& o, const float* in, size_t count, uint8_t* out,
                size_t out_capacity, void*) const override {
    return encode_host(o, in, count, out, out_capacity);
  }
  void decode(const uint8_t* payload, size_t length, float* out, size_t count, DecodeMode mode,
              int threads, void*) const override {
    decode_host(payload, length, out, count, mode, threads);
  }
};

}  // namespace

const CodecBackend& host_backend() {
  static const HostBackend backend;
  return backend;
}

}  // namespace codec

}  // namespace octet
