// liboctet_cuda.so: the device backend of the codec (src/codec/backend.h), loaded by liboctet on
// first use. It decides where the bytes live and moves them; scales, codes and special entries come
// from the kernels in codec_kernels.cu, and everything else of a payload (argument checks, layout,
// header, checksum, validation) is the codec layer's shared payload assembly (payload.h), so the
// two backends cannot drift.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codec/backend.h"
#include "codec/tables.h"
#include "codec_kernels.h"
#include "kernel_inputs.h"
#include "octet/config.h"
#include "octet/export.h"

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

bool device_present(std::string* why) {
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

void require_device() {
  std::string why;
  if (!device_present(&why)) throw Error(ErrorCode::kUnavailable, why);
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

// The encode kernel's arguments: body laid out as the payload (scales at base.scales, codes at
// base.codes), one flag byte per block at flags.
cuda_detail::EncodeArgs encode_args(const float* d_in, size_t count,
                                    const codec::ResolvedOptions& r, const Layout& base,
                                    uint8_t* body, uint8_t* flags) {
  const CodecOptions& o = r.options;
  const detail::QuantTable& host_table = codec::quant_table(o.type, o.mantissa_exponent_offset);
  cuda_detail::EncodeArgs a{};
  a.in = d_in;
  a.count = count;
  a.block = r.block;
  a.blocks = base.blocks;
  a.table = device_table(o.type, o.mantissa_exponent_offset);
  a.table_bytes = cuda_detail::table_bytes(host_table);
  a.stochastic = o.stochastic;
  a.seed = o.seed;
  a.index_offset = o.index_offset;
  a.scales = body + base.scales;
  a.codes = body + base.codes;
  a.flags = flags;
  a.bits = r.bits;
  a.sms = sm_count();
  return a;
}

// Runs the encode kernel into body and returns the blocks that hold NaN/Inf. Throws for mixed
// signs (unsigned type). The flags are read only when their summary says a block is flagged.
std::vector<uint32_t> encode_body(const float* d_in, size_t count, const codec::ResolvedOptions& r,
                                  const Layout& base, uint8_t* body, cudaStream_t stream) {
  const size_t summary_at = (base.blocks + 3) / 4 * 4;  // 4-aligned (the buffer is 256-aligned)
  DeviceBuffer flags(summary_at + sizeof(uint32_t), stream);
  cuda_detail::EncodeArgs a = encode_args(d_in, count, r, base, body, flags.get());
  a.summary = reinterpret_cast<uint32_t*>(flags.get() + summary_at);
  check(cuda_detail::launch_encode(a, stream), "encode kernel launch");
  uint32_t summary = 0;
  copy(&summary, a.summary, sizeof summary, stream);
  sync(stream);
  if (summary == 0) return {};
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
  codec::store_u32(crc, codec::crc32_of(p, body));  // body_checksum over a host copy of the body
  if (!out_on_device) {
    std::memcpy(out + l.checksum, crc, sizeof crc);
    return;
  }
  copy(out + l.checksum, crc, sizeof crc, stream);
  sync(stream);
}

// ---- decode ---------------------------------------------------------------------------------

// A host image of a device payload with every byte validate_body reads (all of it with a CRC).
// Left uninitialised elsewhere: validate_body reads nothing else, and a zero-filled image made
// decode_device of 256 MiB of fp32 take 39 ms on an H200 machine (0.27-0.36 ms without).
std::unique_ptr<uint8_t[]> host_image(const uint8_t* d_payload, const Layout& l, bool whole,
                                      cudaStream_t stream) {
  std::unique_ptr<uint8_t[]> h(new uint8_t[l.size]);
  if (whole) {
    copy(h.get(), d_payload, l.size, stream);
  } else {
    copy(h.get(), d_payload, l.codes, stream);
    copy(h.get() + l.special, d_payload + l.special, l.size - l.special, stream);
    if (l.code_bytes > 0) copy(h.get() + l.special - 1, d_payload + l.special - 1, 1, stream);
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

size_t encode_payload(const codec::ResolvedOptions& r, const float* d_in, size_t count,
                      uint8_t* out, size_t out_capacity, cudaStream_t stream) {
  const codec::EncodePlan plan = codec::plan_encode(r, d_in, count, out, out_capacity);
  require_device();
  Where in_at{true, 0};
  check(cudaGetDevice(&in_at.device), "cudaGetDevice");
  if (count > 0) in_at = locate(d_in);
  if (!in_at.on_device) invalid("encode_device: the input is not device memory");
  const DeviceScope scope(in_at.device);
  const Where out_at = locate(out);
  if (out_at.on_device && out_at.device != in_at.device)
    invalid("encode_device: input and output are on different devices");

  // Kernels write straight into a device `out`, else into staging copied back at the end.
  const Layout& base = plan.base;
  DeviceBuffer staging(out_at.on_device ? 0 : base.special, stream);
  uint8_t* body = out_at.on_device ? out : staging.get();
  std::vector<uint32_t> specials;
  if (count > 0) specials = encode_body(d_in, count, r, base, body, stream);
  const auto special_count = static_cast<uint32_t>(specials.size());
  const Layout l = codec::finish_layout(plan, special_count, out_capacity);
  DeviceBuffer special_staging(out_at.on_device ? 0 : l.checksum - l.special, stream);
  encode_special(d_in, count, r.block, specials,
                 out_at.on_device ? out + l.special : special_staging.get(), stream);

  uint8_t header[codec::kHeaderSize];
  codec::write_plan_header(header, plan, special_count);
  if (out_at.on_device) {
    copy(out, header, sizeof header, stream);
  } else {
    std::memcpy(out, header, sizeof header);
    copy(out + l.scales, body + l.scales, l.special - l.scales, stream);
    copy(out + l.special, special_staging.get(), l.checksum - l.special, stream);
  }
  sync(stream);
  if (r.options.checksum) write_checksum(out, out_at.on_device, l, stream);
  return l.size;
}

// ---- asynchronous encode -----------------------------------------------------------------------

// The asynchronous encode's device scratch for one device and stream: per-block flags, the list
// of NaN/Inf blocks, the count and status words, header_kernel's CRC table. It grows to the
// largest call and is kept for the process, so that later calls allocate nothing and can be
// captured in a CUDA graph.
struct Workspace {
  uint8_t* flags = nullptr;
  uint32_t* list = nullptr;
  // encode: [0] the special count, [1] the status, [3] the flags' summary; decode: [2] the count
  uint32_t* words = nullptr;
  uint32_t* crc_delta = nullptr;
  uint64_t blocks = 0;
  // Held while a call grows the scratch and enqueues the kernels that use it: the calls of
  // several host threads on one stream then run one after another on the device, never
  // interleaved over the same scratch.
  std::mutex enqueue;
};

// A stream's workspace, held for the caller until `hold` goes.
struct HeldWorkspace {
  Workspace& w;
  std::unique_lock<std::mutex> hold;
};

void refuse_while_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  if (status != cudaStreamCaptureStatusNone)
    invalid(
        "encode_device_async: the first call of this size on this stream allocates its workspace "
        "and cannot be captured; call it once before the capture");
}

HeldWorkspace workspace(int device, cudaStream_t stream, uint64_t blocks) {
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, Workspace> all;  // nodes never move
  Workspace* found = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    found = &all[{device, stream}];
  }
  Workspace& w = *found;
  std::unique_lock<std::mutex> hold(w.enqueue);
  if (w.words != nullptr && blocks <= w.blocks) return {w, std::move(hold)};
  refuse_while_capturing(stream);
  if (w.words == nullptr) {
    const std::array<uint32_t, 1024> deltas = cuda_detail::header_crc_deltas();
    check(cudaMalloc(&w.words, 4 * sizeof(uint32_t)), "cudaMalloc");
    check(cudaMalloc(&w.crc_delta, sizeof deltas), "cudaMalloc");
    check(cudaMemcpy(w.crc_delta, deltas.data(), sizeof deltas, cudaMemcpyHostToDevice),
          "cudaMemcpy");
  }
  if (blocks > w.blocks) {
    sync(stream);  // earlier calls on the stream may still use the smaller buffers
    cudaFree(w.flags);
    cudaFree(w.list);
    w.flags = nullptr;
    w.list = nullptr;
    w.blocks = 0;
    check(cudaMalloc(&w.flags, blocks), "cudaMalloc");
    check(cudaMalloc(&w.list, 4 * blocks), "cudaMalloc");
    w.blocks = blocks;
  }
  return {w, std::move(hold)};
}

// The one device holding every named pointer (null ones are skipped: empty ranges); throws
// kInvalidArgument for host memory or pointers on two devices.
int common_device(const char* api,
                  std::initializer_list<std::pair<const void*, const char*>> pointers) {
  int device = -1;
  const char* first = nullptr;
  for (const auto& [p, name] : pointers) {
    if (p == nullptr) continue;
    const Where at = locate(p);
    if (!at.on_device) invalid(std::string(api) + ": the " + name + " is not device memory");
    if (first != nullptr && at.device != device)
      invalid(std::string(api) + ": the " + name + " and the " + first +
              " are on different devices");
    if (first == nullptr) first = name, device = at.device;
  }
  return device;
}

// The body CRC of `checksum` is a host computation: the asynchronous calls refuse it.
void refuse_checksum(const codec::ResolvedOptions& r, const char* api, const char* instead) {
  if (r.options.checksum)
    invalid(std::string(api) + ": checksum is not supported (the body CRC is a host step); use " +
            instead);
}

void encode_payload_async(const codec::ResolvedOptions& r, const float* d_in, size_t count,
                          uint8_t* out, size_t out_capacity, uint64_t* d_size,
                          cudaStream_t stream) {
  refuse_checksum(r, "encode_device_async", "encode_device");
  if (d_size == nullptr) invalid("encode_device_async: the size pointer is null");
  const codec::EncodePlan plan = codec::plan_encode(r, d_in, count, out, out_capacity);
  // Room for every block to hold NaN/Inf: how many do is only known on the device.
  codec::finish_layout(plan, static_cast<uint32_t>(plan.base.blocks), out_capacity);
  require_device();
  const int device =
      common_device("encode_device_async",
                    {{count > 0 ? d_in : nullptr, "input"}, {out, "output"}, {d_size, "size"}});
  const DeviceScope scope(device);
  const HeldWorkspace held = workspace(device, stream, plan.base.blocks);
  const Workspace& w = held.w;
  cuda_detail::EncodeArgs e = encode_args(d_in, count, r, plan.base, out, w.flags);
  e.summary = w.words + 3;
  if (count > 0) check(cuda_detail::launch_encode(e, stream), "encode kernel launch");
  cuda_detail::FinishArgs f = cuda_detail::finish_args(plan);
  f.flags = w.flags;
  f.summary = count > 0 ? e.summary : nullptr;
  f.list = w.list;
  f.specials = w.words;
  f.status = w.words + 1;
  f.crc_delta = w.crc_delta;
  f.out = out;
  f.size = d_size;
  cuda_detail::SpecialArgs special{};
  special.in = d_in;
  special.count = count;
  special.block = r.block;
  special.list = w.list;
  special.out = out + plan.base.special;
  special.specials_at = w.words;
  check(cuda_detail::launch_finish(f, special, stream), "payload kernels launch");
}

void decode_payload_async(const codec::ResolvedOptions& r, const uint8_t* payload, size_t capacity,
                          float* out, size_t count, DecodeMode mode, uint32_t* d_status,
                          cudaStream_t stream) {
  refuse_checksum(r, "decode_device_async", "decode_device");
  if (payload == nullptr) invalid("payload pointer is null");
  if (d_status == nullptr) invalid("decode_device_async: the status pointer is null");
  if (out == nullptr && count > 0) invalid("output is null");
  if (count > codec::kMaxCount) invalid("count too large");
  cuda_detail::ValidateArgs v = cuda_detail::validate_args(r, count);
  if (capacity < v.base_size)
    invalid("decode_device_async: a payload of " + std::to_string(count) +
            " elements needs at least " + std::to_string(v.base_size) + " bytes, the buffer has " +
            std::to_string(capacity));
  require_device();
  const int device = common_device(
      "decode_device_async",
      {{payload, "payload"}, {count > 0 ? out : nullptr, "output"}, {d_status, "status"}});
  const DeviceScope scope(device);
  const HeldWorkspace held = workspace(device, stream, 0);
  const Workspace& w = held.w;
  v.payload = payload;
  v.capacity = capacity;
  v.crc_delta = w.crc_delta;
  v.status = d_status;
  v.specials = w.words + 2;
  check(cuda_detail::launch_validate(v, stream), "validate kernel launch");
  cuda_detail::DecodeArgs a{};
  a.scales = payload + v.scales;
  a.codes = payload + v.codes;
  a.special = payload + v.special;
  a.count = count;
  a.block = r.block;
  a.bits = r.bits;
  a.table = device_table(r.options.type, r.options.mantissa_exponent_offset);
  a.out = out;
  a.accumulate = mode == DecodeMode::kAccumulate;
  a.sms = sm_count();
  a.status = d_status;
  a.specials_at = w.words + 2;
  check(cuda_detail::launch_decode(a, stream), "decode kernel launch");
}

// ---- blocking decode ---------------------------------------------------------------------------

// validate_body on the host: a device payload through its host image.
void validate_on_host(const uint8_t* payload, bool on_device, const PayloadInfo& info,
                      const Layout& l, cudaStream_t stream) {
  if (on_device)
    codec::validate_body(host_image(payload, l, info.has_checksum, stream).get(), info, l);
  else
    codec::validate_body(payload, info, l);
}

// The decode kernels' arguments for a payload (already on the device at d_payload) with this
// header and layout.
cuda_detail::DecodeArgs decode_args(const PayloadInfo& info, const Layout& l,
                                    const uint8_t* d_payload, float* out, DecodeMode mode) {
  cuda_detail::DecodeArgs a{};
  a.scales = d_payload + l.scales;
  a.codes = d_payload + l.codes;
  a.special = d_payload + l.special;
  a.specials = info.special_blocks;
  a.count = info.count;
  a.block = info.block_size;
  a.bits = data_type_bits(info.type);
  a.table = device_table(info.type, info.mantissa_exponent_offset);
  a.out = out;
  a.accumulate = mode == DecodeMode::kAccumulate;
  a.sms = sm_count();
  return a;
}

// The body check on the device (launch_validate's kernels), then the decode kernels gated by its
// verdict, which comes back (0: valid and decoded). The verdict and the count live in words of
// this call's own: the workspace's are shared by every call on the stream, and two host threads
// may decode on the same stream at once.
uint32_t decode_checked_on_device(const PayloadInfo& info, size_t length, cuda_detail::DecodeArgs a,
                                  const uint8_t* d_payload, int device, cudaStream_t stream) {
  DeviceBuffer words(2 * sizeof(uint32_t), stream);
  cuda_detail::ValidateArgs v = cuda_detail::validate_args(info);
  v.payload = d_payload;
  v.capacity = length;
  v.crc_delta = workspace(device, stream, 0).w.crc_delta;  // constant once made
  v.status = reinterpret_cast<uint32_t*>(words.get());
  v.specials = v.status + 1;
  check(cuda_detail::launch_validate(v, stream), "validate kernel launch");
  a.status = v.status;
  a.specials_at = v.specials;
  check(cuda_detail::launch_decode(a, stream), "decode kernel launch");
  uint32_t status = cuda_detail::kPayloadOk;
  copy(&status, v.status, sizeof status, stream);
  sync(stream);
  return status;
}

// A device payload without a checksum has its body checked on the device, by the kernels of
// decode_device_async, before the decode kernels that they gate (the host check of the 524288
// scales of 256 MiB of 4-bit took 2.8 ms on an H200). Only a broken payload comes to the host,
// for validate_body's own message. With a checksum the host reads the whole payload anyway.
void decode_payload(const uint8_t* payload, size_t length, float* d_out, size_t count,
                    DecodeMode mode, cudaStream_t stream) {
  if (payload == nullptr && length > 0) invalid("payload pointer is null");
  require_device();
  const Where p_at = payload ? locate(payload) : Where{false, 0};
  const PayloadInfo info = read_header_anywhere(payload, length, p_at.on_device, stream);
  if (d_out == nullptr && count > 0) invalid("output is null");
  const Layout l = codec::checked_layout(info, length, count);
  const bool check_on_device = p_at.on_device && !info.has_checksum && count > 0;
  if (!check_on_device) validate_on_host(payload, p_at.on_device, info, l, stream);
  if (count == 0) return;

  const Where out_at = locate(d_out);
  if (!out_at.on_device) invalid("decode_device: the output is not device memory");
  if (p_at.on_device && p_at.device != out_at.device)
    invalid("decode_device: payload and output are on different devices");
  const DeviceScope scope(out_at.device);
  DeviceBuffer staging(p_at.on_device ? 0 : length, stream);
  const uint8_t* d_payload = p_at.on_device ? payload : staging.get();
  if (!p_at.on_device) copy(staging.get(), payload, length, stream);
  const cuda_detail::DecodeArgs a = decode_args(info, l, d_payload, d_out, mode);
  if (!check_on_device) {
    check(cuda_detail::launch_decode(a, stream), "decode kernel launch");
    return sync(stream);
  }
  const uint32_t status =
      decode_checked_on_device(info, length, a, d_payload, out_at.device, stream);
  if (status == cuda_detail::kPayloadOk) return;
  validate_on_host(payload, true, info, l, stream);  // throws validate_body's message
  throw Error(ErrorCode::kInternal, "decode_device: the device rejected a payload body that the " +
                                        std::string("host accepts (rule ") +
                                        std::to_string(status) + ")");
}

class DeviceBackend final : public codec::CodecBackend {
 public:
  const char* name() const override { return "cuda"; }
  bool available(std::string* why) const override { return device_present(why); }
  size_t encode(const codec::ResolvedOptions& options, const float* in, size_t count, uint8_t* out,
                size_t out_capacity, void* stream) const override {
    return encode_payload(options, in, count, out, out_capacity, static_cast<cudaStream_t>(stream));
  }
  void encode_async(const codec::ResolvedOptions& options, const float* in, size_t count,
                    uint8_t* out, size_t out_capacity, uint64_t* size,
                    void* stream) const override {
    encode_payload_async(options, in, count, out, out_capacity, size,
                         static_cast<cudaStream_t>(stream));
  }
  void decode_async(const codec::ResolvedOptions& options, const uint8_t* payload, size_t capacity,
                    float* out, size_t count, DecodeMode mode, uint32_t* status,
                    void* stream) const override {
    decode_payload_async(options, payload, capacity, out, count, mode, status,
                         static_cast<cudaStream_t>(stream));
  }
  void decode(const uint8_t* payload, size_t length, float* out, size_t count, DecodeMode mode, int,
              void* stream) const override {
    decode_payload(payload, length, out, count, mode, static_cast<cudaStream_t>(stream));
  }
};

}  // namespace
}  // namespace octet

// The one symbol liboctet_cuda exports (see codec::kDeviceEntryPoint). liboctet passes its version:
// the two must come from the same build, since they share C++ types.
extern "C" OCTET_API const octet::codec::CodecBackend* octet_cuda_backend_v1(
    const char* liboctet_version) {
  static const octet::DeviceBackend backend;
  if (!liboctet_version || std::strcmp(liboctet_version, OCTET_VERSION_STRING) != 0) return nullptr;
  return &backend;
}
