// Host side of the device codec (include/octet/cuda.h): validation, where the bytes live, the
// header, the NaN/Inf list and the checksum. Scales, codes and special entries come from the
// kernels in codec_kernels.cu; the header and CRC reuse src/codec's code, so they cannot drift.
#include "octet/cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codec/payload.h"
#include "codec/tables.h"
#include "codec_kernels.h"

namespace octet {
namespace {

using codec::Layout;

bool means_unavailable(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary ||
         e == cudaErrorDevicesUnavailable || e == cudaErrorInitializationError ||
         e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice ||
         e == cudaErrorNoKernelImageForDevice;
}

// Maps a CUDA failure to octet::Error; never exits.
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so that later calls start clean
  throw Error(means_unavailable(e) ? ErrorCode::kUnavailable : ErrorCode::kInternal,
              std::string("CUDA ") + what + " failed: " + cudaGetErrorName(e) + ": " +
                  cudaGetErrorString(e));
}

void require_device() {
  std::string why;
  if (!cuda_device_available(&why)) throw Error(ErrorCode::kUnavailable, why);
}

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, what);
}

// Where a pointer lives: device (or managed) memory of `device`, or host memory.
struct Where {
  bool on_device;
  int device;
};

Where locate(const void* p) {
  cudaPointerAttributes attr{};
  check(cudaPointerGetAttributes(&attr, p), "cudaPointerGetAttributes");
  const bool dev = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  return Where{dev, attr.device};
}

// Makes `device` current for the call and restores the caller's device afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (device != previous_) check(cudaSetDevice(device), "cudaSetDevice");
    device_ = device;
  }
  ~DeviceScope() {
    if (device_ != previous_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  int device_ = 0;
};

// Stream-ordered scratch memory, freed on the same stream.
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes > 0) check(cudaMallocAsync(&ptr_, bytes, stream), "cudaMallocAsync");
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  uint8_t* get() const { return static_cast<uint8_t*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
};

// The code table of (type, offset) on the current device: uploaded once, kept for the process.
const detail::QuantTable* device_table(DataType type, int offset) {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  static std::mutex mutex;
  static std::map<std::pair<int, int>, void*> tables;
  const std::lock_guard<std::mutex> lock(mutex);
  void*& table = tables[{device, static_cast<int>(type) * 16 + offset}];
  if (table == nullptr) {
    const detail::QuantTable& host = codec::quant_table(type, offset);
    void* p = nullptr;
    check(cudaMalloc(&p, sizeof host), "cudaMalloc");
    const cudaError_t e = cudaMemcpy(p, &host, sizeof host, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (e != cudaSuccess) cudaFree(p);
    check(e, "cudaMemcpy");
    table = p;
  }
  return static_cast<const detail::QuantTable*>(table);
}

int sm_count() {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "device query");
  return sms > 0 ? sms : 1;
}

void copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes > 0) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpy");
}

void sync(cudaStream_t stream) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

// ---- encode ---------------------------------------------------------------------------------

// Runs the encode kernel into body (laid out as the payload: scales at base.scales, codes at
// base.codes) and returns the blocks that hold NaN/Inf. Throws for mixed signs (unsigned type).
std::vector<uint32_t> encode_body(const float* d_in, size_t count, const CodecOptions& o,
                                  const Layout& base, uint8_t* body, cudaStream_t stream) {
  const detail::QuantTable& host_table = codec::quant_table(o.type, o.mantissa_exponent_offset);
  DeviceBuffer flags(base.blocks, stream);
  cuda_detail::EncodeArgs a{};
  a.in = d_in;
  a.count = count;
  a.block = validate_options(o);
  a.blocks = base.blocks;
  a.table = device_table(o.type, o.mantissa_exponent_offset);
  a.table_bytes = cuda_detail::table_bytes(host_table);
  a.stochastic = o.stochastic;
  a.seed = o.seed;
  a.index_offset = o.index_offset;
  a.scales = body + base.scales;
  a.codes = body + base.codes;
  a.flags = flags.get();
  a.bits = data_type_bits(o.type);
  a.sms = sm_count();
  check(cuda_detail::launch_encode(a, stream), "encode kernel launch");
  std::vector<uint8_t> host_flags(base.blocks);
  copy(host_flags.data(), flags.get(), host_flags.size(), stream);
  sync(stream);
  std::vector<uint32_t> specials;
  bool mixed = false;
  for (uint64_t b = 0; b < base.blocks; ++b) {
    if (host_flags[b] & cuda_detail::kFlagNonFinite) specials.push_back(static_cast<uint32_t>(b));
    mixed = mixed || (host_flags[b] & cuda_detail::kFlagMixedSign);
  }
  if (mixed) invalid("dynamic_unsigned needs blocks whose elements all have one sign");
  return specials;
}

// Writes the special section for `specials` at dst (device memory).
void encode_special(const float* d_in, size_t count, uint32_t block,
                    const std::vector<uint32_t>& specials, uint8_t* dst, cudaStream_t stream) {
  if (specials.empty()) return;
  DeviceBuffer list(4 * specials.size(), stream);
  copy(list.get(), specials.data(), 4 * specials.size(), stream);
  cuda_detail::SpecialArgs a{};
  a.in = d_in;
  a.count = count;
  a.block = block;
  a.list = reinterpret_cast<const uint32_t*>(list.get());
  a.specials = static_cast<uint32_t>(specials.size());
  a.out = dst;
  check(cuda_detail::launch_write_special(a, stream), "special kernel launch");
  sync(stream);  // `specials` (host) must outlive the copy
}

// The body CRC of a finished payload at out (device or host).
void write_checksum(uint8_t* out, bool out_on_device, const Layout& l, cudaStream_t stream) {
  const size_t body = l.checksum - codec::kHeaderSize;
  std::vector<uint8_t> host;
  const uint8_t* p = out + codec::kHeaderSize;
  if (out_on_device) {
    host.resize(body);
    copy(host.data(), p, body, stream);
    sync(stream);
    p = host.data();
  }
  uint8_t crc[4];
  codec::store_u32(crc, codec::crc32_of(p, body));
  if (!out_on_device) {
    std::memcpy(out + l.checksum, crc, sizeof crc);
    return;
  }
  copy(out + l.checksum, crc, sizeof crc, stream);
  sync(stream);
}

// ---- decode ---------------------------------------------------------------------------------

// A host image of a device payload with every byte validate_body reads (all of it with a CRC).
std::vector<uint8_t> host_image(const uint8_t* d_payload, const Layout& l, bool whole,
                                cudaStream_t stream) {
  std::vector<uint8_t> h(l.size);
  if (whole) {
    copy(h.data(), d_payload, l.size, stream);
  } else {
    copy(h.data(), d_payload, l.codes, stream);
    copy(h.data() + l.special, d_payload + l.special, l.size - l.special, stream);
    if (l.code_bytes > 0) copy(h.data() + l.special - 1, d_payload + l.special - 1, 1, stream);
  }
  sync(stream);
  return h;
}

PayloadInfo read_header_anywhere(const uint8_t* payload, size_t length, bool on_device,
                                 cudaStream_t stream) {
  if (!on_device) return codec::read_header(payload, length);
  uint8_t header[codec::kHeaderSize] = {};
  const size_t n = length < codec::kHeaderSize ? length : codec::kHeaderSize;
  copy(header, payload, n, stream);
  sync(stream);
  return codec::read_header(header, length);
}

}  // namespace

bool cuda_device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(e);
    return false;
  }
  if (n <= 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  return true;
}

size_t encode_device(const float* d_in, size_t count, const CodecOptions& o, uint8_t* out,
                     size_t out_capacity, void* stream_handle) {
  const uint32_t block = validate_options(o);
  if (count > codec::kMaxCount) invalid("count too large");
  if (d_in == nullptr && count > 0) invalid("input is null");
  if (out == nullptr) invalid("output is null");
  const int bits = data_type_bits(o.type);
  const Layout base = codec::make_layout(count, block, bits, 0, o.checksum);
  if (out_capacity < base.size)
    invalid("output buffer too small: " + std::to_string(out_capacity) + " < " +
            std::to_string(base.size) + " bytes");
  require_device();
  cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
  Where in_at{true, 0};
  check(cudaGetDevice(&in_at.device), "cudaGetDevice");
  if (count > 0) in_at = locate(d_in);
  if (!in_at.on_device) invalid("encode_device: the input is not device memory");
  const DeviceScope scope(in_at.device);
  const Where out_at = locate(out);
  if (out_at.on_device && out_at.device != in_at.device)
    invalid("encode_device: input and output are on different devices");

  // Kernels write straight into a device `out`, else into staging copied back at the end.
  DeviceBuffer staging(out_at.on_device ? 0 : base.special, stream);
  uint8_t* body = out_at.on_device ? out : staging.get();
  std::vector<uint32_t> specials;
  if (count > 0) specials = encode_body(d_in, count, o, base, body, stream);
  const Layout l =
      codec::make_layout(count, block, bits, static_cast<uint32_t>(specials.size()), o.checksum);
  if (out_capacity < l.size)
    invalid("output buffer too small for the NaN/Inf positions: need " + std::to_string(l.size) +
            " bytes (max_encoded_size gives a safe bound)");
  DeviceBuffer special_staging(out_at.on_device ? 0 : l.checksum - l.special, stream);
  encode_special(d_in, count, block, specials,
                 out_at.on_device ? out + l.special : special_staging.get(), stream);

  PayloadInfo info;
  info.type = o.type;
  info.block_size = block;
  info.count = count;
  info.special_blocks = static_cast<uint32_t>(specials.size());
  info.has_checksum = o.checksum;
  info.stochastic = o.stochastic;
  info.mantissa_exponent_offset = o.mantissa_exponent_offset;
  uint8_t header[codec::kHeaderSize];
  codec::write_header(header, info);
  if (out_at.on_device) {
    copy(out, header, sizeof header, stream);
  } else {
    std::memcpy(out, header, sizeof header);
    copy(out + l.scales, body + l.scales, l.special - l.scales, stream);
    copy(out + l.special, special_staging.get(), l.checksum - l.special, stream);
  }
  sync(stream);
  if (o.checksum) write_checksum(out, out_at.on_device, l, stream);
  return l.size;
}

void decode_device(const uint8_t* payload, size_t length, float* d_out, size_t count,
                   DecodeMode mode, void* stream_handle) {
  if (payload == nullptr && length > 0) invalid("payload pointer is null");
  require_device();
  cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
  const Where p_at = payload ? locate(payload) : Where{false, 0};
  const PayloadInfo info = read_header_anywhere(payload, length, p_at.on_device, stream);
  if (d_out == nullptr && count > 0) invalid("output is null");
  const Layout l = codec::checked_layout(info, length, count);
  if (p_at.on_device)
    codec::validate_body(host_image(payload, l, info.has_checksum, stream).data(), info, l);
  else
    codec::validate_body(payload, info, l);
  if (count == 0) return;

  const Where out_at = locate(d_out);
  if (!out_at.on_device) invalid("decode_device: the output is not device memory");
  if (p_at.on_device && p_at.device != out_at.device)
    invalid("decode_device: payload and output are on different devices");
  const DeviceScope scope(out_at.device);
  DeviceBuffer staging(p_at.on_device ? 0 : length, stream);
  const uint8_t* d_payload = p_at.on_device ? payload : staging.get();
  if (!p_at.on_device) copy(staging.get(), payload, length, stream);

  cuda_detail::DecodeArgs a{};
  a.scales = d_payload + l.scales;
  a.codes = d_payload + l.codes;
  a.special = d_payload + l.special;
  a.specials = info.special_blocks;
  a.count = info.count;
  a.block = info.block_size;
  a.bits = data_type_bits(info.type);
  a.table = device_table(info.type, info.mantissa_exponent_offset);
  a.out = d_out;
  a.accumulate = mode == DecodeMode::kAccumulate;
  a.sms = sm_count();
  check(cuda_detail::launch_decode(a, stream), "decode kernel launch");
  sync(stream);
}

}  // namespace octet
