// The device codec against the CPU codec: payload bytes and decoded floats must be identical.
// Device tests skip (with the reason) where no CUDA device is usable; the availability test always
// runs, so a CPU-only machine still checks that "no device" is reported cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "octet/codec.h"
#include "octet/config.h"
#include "octet/cuda.h"

#if OCTET_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace octet {
namespace {

TEST(CudaAvailability, ReportsMissingDeviceCleanly) {
  std::string why;
  if (cuda_device_available(&why)) {
#if OCTET_HAVE_CUDA
    int n = 0;
    EXPECT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    EXPECT_GT(n, 0);
#else
    ADD_FAILURE() << "a build without CUDA reported a device";
#endif
    return;
  }
  EXPECT_FALSE(why.empty());
  const float x[4] = {1, 2, 3, 4};
  std::vector<uint8_t> out(max_encoded_size(4, {}));
  try {
    encode_device(x, 4, {}, out.data(), out.size());
    ADD_FAILURE() << "encode_device did not throw without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
    EXPECT_NE(std::string(e.what()).size(), 0u);
  }
  const std::vector<uint8_t> payload = encode(std::vector<float>(x, x + 4));
  float back[4] = {};
  try {
    decode_device(payload.data(), payload.size(), back, 4);
    ADD_FAILURE() << "decode_device did not throw without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
  uint64_t size = 0;
  try {
    encode_device_async(x, 4, {}, out.data(), out.size(), &size);
    ADD_FAILURE() << "encode_device_async did not throw without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
  uint32_t status = 0;
  try {
    decode_device_async(payload.data(), payload.size(), {}, back, 4, &status);
    ADD_FAILURE() << "decode_device_async did not throw without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
}

TEST(CudaAvailability, BadOptionsAreInvalidArgumentWithOrWithoutDevice) {
  const float x[4] = {1, 2, 3, 4};
  std::vector<uint8_t> out(1024);
  CodecOptions bad;
  bad.block_size = 100;
  try {
    encode_device(x, 4, bad, out.data(), out.size());
    ADD_FAILURE() << "a block size of 100 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

#if OCTET_HAVE_CUDA

#define SKIP_WITHOUT_DEVICE()                              \
  do {                                                     \
    std::string why;                                       \
    if (!cuda_device_available(&why)) GTEST_SKIP() << why; \
  } while (0)

void cuda_ok(cudaError_t e) {
  ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
}

// Device memory with `offset` spare bytes in front, to test misaligned pointers.
class DeviceBytes {
 public:
  DeviceBytes(size_t bytes, size_t offset) : offset_(offset) {
    cuda_ok(cudaMalloc(&base_, bytes + offset + 1));
  }
  ~DeviceBytes() { cudaFree(base_); }
  uint8_t* get() const { return static_cast<uint8_t*>(base_) + offset_; }

 private:
  void* base_ = nullptr;
  size_t offset_;
};

void upload(void* dst, const void* src, size_t bytes) {
  if (bytes) cuda_ok(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void download(void* dst, const void* src, size_t bytes) {
  if (bytes) cuda_ok(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

// Blocks of different magnitudes (normal, tiny, denormal, huge, zero, absmax near 1e38 whose
// reciprocal the codec rescales, a run of -0), some single-signed, and a few NaN/Inf when
// `specials`.
std::vector<float> make_input(size_t n, uint32_t seed, bool specials, bool non_negative) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float scales[] = {1.0f, 1e-30f, 1e-41f, 3e37f, 0.0f, 1e-3f, 6e37f, -0.0f};
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t kind = (i / 64) % 8;
    float v = normal(rng) * scales[kind];
    if ((i / 128) % 5 == 3) v = std::fabs(v);  // a positive-only stretch
    x[i] = kind == 7 ? -0.0f : non_negative ? std::fabs(v) : v;
  }
  if (specials && n > 0) {
    x[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    x[rng() % n] = std::numeric_limits<float>::infinity();
    x[rng() % n] = -std::numeric_limits<float>::infinity();
    x[n - 1] = std::numeric_limits<float>::infinity();
  }
  return x;
}

struct Placement {
  size_t in_offset = 0;   // bytes added to the device input pointer
  size_t out_offset = 0;  // bytes added to the output pointer
  bool out_on_host = false;
};

std::vector<uint8_t> gpu_encode(const std::vector<float>& x, const CodecOptions& o,
                                const Placement& at) {
  const size_t cap = max_encoded_size(x.size(), o);
  DeviceBytes in(x.size() * sizeof(float), at.in_offset);
  upload(in.get(), x.data(), x.size() * sizeof(float));
  std::vector<uint8_t> out(cap + at.out_offset);
  size_t n = 0;
  const float* d_in = reinterpret_cast<const float*>(in.get());
  if (at.out_on_host) {
    n = encode_device(d_in, x.size(), o, out.data() + at.out_offset, cap);
    out.erase(out.begin(), out.begin() + at.out_offset);
  } else {
    DeviceBytes d_out(cap, at.out_offset);
    n = encode_device(d_in, x.size(), o, d_out.get(), cap);
    out.resize(n);
    download(out.data(), d_out.get(), n);
  }
  out.resize(n);
  return out;
}

// Bitwise equality, except that any NaN matches any NaN (NaN payload bits may differ).
void expect_same_floats(const std::vector<float>& want, const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    uint32_t a, b;
    std::memcpy(&a, &want[i], 4);
    std::memcpy(&b, &got[i], 4);
    ASSERT_EQ(a, b) << "element " << i << ": " << want[i] << " vs " << got[i];
  }
}

const size_t kSizes[] = {0, 1, 2, 3, 5, 63, 64, 65, 127, 128, 129, 1000, 2047, 2048, 2049, 6150};

TEST(CudaEncode, MatchesCpuForEveryTypeAndSize) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : all_data_types()) {
    for (size_t n : kSizes) {
      CodecOptions o;
      o.type = type;
      const auto x =
          make_input(n, static_cast<uint32_t>(n) + 1, false, type == DataType::kDynamicUnsigned);
      ASSERT_EQ(gpu_encode(x, o, {}), encode(x, o)) << data_type_name(type) << " n=" << n;
    }
  }
}

TEST(CudaEncode, MatchesCpuWithNanInfAndChecksum) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : all_data_types()) {
    for (size_t n : {size_t{1}, size_t{130}, size_t{4097}}) {
      CodecOptions o;
      o.type = type;
      o.checksum = true;
      const auto x = make_input(n, 7, true, type == DataType::kDynamicUnsigned);
      const auto cpu = encode(x, o);
      ASSERT_GT(inspect(cpu.data(), cpu.size()).special_blocks, 0u);
      ASSERT_EQ(gpu_encode(x, o, {}), cpu) << data_type_name(type) << " n=" << n;
      ASSERT_EQ(gpu_encode(x, o, {0, 0, true}), cpu) << "host output";
    }
  }
}

TEST(CudaEncode, MatchesCpuWithStochasticRounding) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : {DataType::kDynamic, DataType::kLinear, DataType::kDynamic4}) {
    CodecOptions o;
    o.type = type;
    o.stochastic = true;
    o.seed = 0x1234567890abcdefull;
    o.index_offset = 1000003;
    const auto x = make_input(5000, 3, true, false);
    ASSERT_EQ(gpu_encode(x, o, {}), encode(x, o)) << data_type_name(type);
  }
}

TEST(CudaEncode, MatchesCpuForBlockSizesAndOffsets) {
  SKIP_WITHOUT_DEVICE();
  const auto x = make_input(70001, 11, true, false);
  for (uint32_t block : {64u, 256u, 65536u}) {
    CodecOptions o;
    o.block_size = block;
    ASSERT_EQ(gpu_encode(x, o, {}), encode(x, o)) << "block " << block;
  }
  CodecOptions m;
  m.type = DataType::kMantissa;
  m.mantissa_exponent_offset = 5;
  ASSERT_EQ(gpu_encode(x, m, {}), encode(x, m));
}

TEST(CudaEncode, MisalignedPointers) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : {DataType::kDynamic, DataType::kDynamic4}) {
    CodecOptions o;
    o.type = type;
    const auto x = make_input(3001, 5, true, false);
    const auto cpu = encode(x, o);
    for (Placement at : {Placement{1, 0, false}, Placement{2, 3, false}, Placement{4, 1, false},
                         Placement{3, 5, true}})
      ASSERT_EQ(gpu_encode(x, o, at), cpu) << at.in_offset << "/" << at.out_offset;
  }
}

TEST(CudaEncode, RejectsBadInputWithClearErrors) {
  SKIP_WITHOUT_DEVICE();
  const auto x = make_input(300, 1, false, false);
  DeviceBytes in(x.size() * 4, 0);
  upload(in.get(), x.data(), x.size() * 4);
  const float* d_in = reinterpret_cast<const float*>(in.get());
  std::vector<uint8_t> out(max_encoded_size(x.size(), {}));
  auto code_of = [](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kOk;
  };
  EXPECT_EQ(code_of([&] { encode_device(d_in, x.size(), {}, out.data(), 40); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { encode_device(x.data(), x.size(), {}, out.data(), out.size()); }),
            ErrorCode::kInvalidArgument);  // host input
  CodecOptions bad;
  bad.block_size = 100;
  EXPECT_EQ(code_of([&] { encode_device(d_in, x.size(), bad, out.data(), out.size()); }),
            ErrorCode::kInvalidArgument);
  CodecOptions unsigned_type;
  unsigned_type.type = DataType::kDynamicUnsigned;
  EXPECT_EQ(code_of([&] { encode_device(d_in, x.size(), unsigned_type, out.data(), out.size()); }),
            ErrorCode::kInvalidArgument);  // mixed signs in a block
}

void expect_decode_matches(const std::vector<uint8_t>& payload, size_t n, DecodeMode mode,
                           bool payload_on_device, size_t out_offset) {
  const std::vector<float> start = make_input(n, 99, false, false);
  std::vector<float> cpu = start;
  decode(payload.data(), payload.size(), cpu.data(), n, mode);
  DeviceBytes d_out(n * 4, out_offset);
  upload(d_out.get(), start.data(), n * 4);
  float* out = reinterpret_cast<float*>(d_out.get());
  if (payload_on_device) {
    DeviceBytes d_payload(payload.size(), 1);
    upload(d_payload.get(), payload.data(), payload.size());
    decode_device(d_payload.get(), payload.size(), out, n, mode);
  } else {
    decode_device(payload.data(), payload.size(), out, n, mode);
  }
  std::vector<float> gpu(n);
  download(gpu.data(), d_out.get(), n * 4);
  expect_same_floats(cpu, gpu);
}

// encode_device_async into device memory at out_offset bytes; the payload (its size read from
// the device after the stream's work), or an empty vector for the size 0 of mixed signs.
std::vector<uint8_t> gpu_encode_async(const std::vector<float>& x, const CodecOptions& o,
                                      size_t in_offset, size_t out_offset) {
  const size_t cap = max_encoded_size(x.size(), o);
  DeviceBytes in(x.size() * sizeof(float), in_offset), out(cap, out_offset), size(8, 0);
  upload(in.get(), x.data(), x.size() * sizeof(float));
  cudaStream_t stream;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  encode_device_async(reinterpret_cast<const float*>(in.get()), x.size(), o, out.get(), cap,
                      reinterpret_cast<uint64_t*>(size.get()), stream);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  uint64_t n = 0;
  download(&n, size.get(), sizeof n);
  EXPECT_LE(n, cap);
  std::vector<uint8_t> payload(n);
  download(payload.data(), out.get(), n);
  return payload;
}

TEST(CudaEncodeAsync, MatchesCpuForEveryTypeSizeNanInfAndRounding) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : all_data_types())
    for (size_t n : kSizes)
      for (bool stochastic : {false, true}) {
        CodecOptions o;
        o.type = type;
        o.stochastic = stochastic;
        o.seed = 11;
        o.index_offset = 5;
        const auto x = make_input(n, static_cast<uint32_t>(n) + 3, n > 100,
                                  type == DataType::kDynamicUnsigned);
        ASSERT_EQ(gpu_encode_async(x, o, 0, 0), encode(x, o))
            << data_type_name(type) << " n=" << n << " sr=" << stochastic;
      }
  const auto x = make_input(70001, 11, true, false);
  CodecOptions o;
  o.block_size = 64;  // many blocks, several of them with NaN/Inf
  ASSERT_EQ(gpu_encode_async(x, o, 3, 1), encode(x, o)) << "misaligned, block 64";
}

TEST(CudaEncodeAsync, MixedSignsGiveSizeZeroAndBadCallsThrow) {
  SKIP_WITHOUT_DEVICE();
  CodecOptions u;
  u.type = DataType::kDynamicUnsigned;
  EXPECT_TRUE(gpu_encode_async(make_input(1000, 2, false, false), u, 0, 0).empty());

  const auto x = make_input(1000, 2, true, false);
  DeviceBytes in(x.size() * 4, 0), out(max_encoded_size(x.size(), {}), 0), size(8, 0);
  const float* d_in = reinterpret_cast<const float*>(in.get());
  auto* d_size = reinterpret_cast<uint64_t*>(size.get());
  const auto code_of = [&](const CodecOptions& o, size_t cap, uint64_t* at) {
    try {
      encode_device_async(d_in, x.size(), o, out.get(), cap, at);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kOk;
  };
  CodecOptions checksum;
  checksum.checksum = true;
  EXPECT_EQ(code_of(checksum, max_encoded_size(x.size(), checksum), d_size),
            ErrorCode::kInvalidArgument);
  // Enough without NaN/Inf but not for every block holding some: refused before any work.
  EXPECT_EQ(code_of({}, max_encoded_size(x.size(), {}) - 1, d_size), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of({}, max_encoded_size(x.size(), {}), nullptr), ErrorCode::kInvalidArgument);
  uint64_t host_size = 0;
  EXPECT_EQ(code_of({}, max_encoded_size(x.size(), {}), &host_size), ErrorCode::kInvalidArgument);
}

// After one call of the largest size, the call is captured in a CUDA graph; replays encode
// whatever the input holds at replay time.
TEST(CudaEncodeAsync, CapturedInAGraphAndReplayed) {
  SKIP_WITHOUT_DEVICE();
  const size_t n = 100003;
  CodecOptions o;
  const size_t cap = max_encoded_size(n, o);
  DeviceBytes in(n * 4, 0), out(cap, 0), size(8, 0);
  const float* d_in = reinterpret_cast<const float*>(in.get());
  auto* d_size = reinterpret_cast<uint64_t*>(size.get());
  cudaStream_t stream;
  cuda_ok(cudaStreamCreate(&stream));
  const auto first = make_input(n, 1, true, false);
  upload(in.get(), first.data(), n * 4);
  encode_device_async(d_in, n, o, out.get(), cap, d_size, stream);  // the warm-up
  cuda_ok(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  encode_device_async(d_in, n, o, out.get(), cap, d_size, stream);
  cuda_ok(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  cuda_ok(cudaGraphInstantiate(&exec, graph, 0));
  for (uint32_t seed : {2u, 3u}) {
    const auto x = make_input(n, seed, seed == 3, false);
    upload(in.get(), x.data(), n * 4);
    cuda_ok(cudaGraphLaunch(exec, stream));
    cuda_ok(cudaStreamSynchronize(stream));
    uint64_t bytes = 0;
    download(&bytes, d_size, sizeof bytes);
    std::vector<uint8_t> payload(bytes);
    download(payload.data(), out.get(), bytes);
    ASSERT_EQ(payload, encode(x, o)) << "replay with input " << seed;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// decode_device_async of a payload in a device buffer of max_encoded_size bytes: the status, and
// the floats (which stay `start` unless the payload was valid).
uint32_t gpu_decode_async(const std::vector<uint8_t>& payload, const CodecOptions& expected,
                          size_t n, DecodeMode mode, std::vector<float>* out) {
  const size_t cap = max_encoded_size(n, expected);
  std::vector<uint8_t> buffer(payload);
  buffer.resize(cap, 0);
  DeviceBytes d_payload(cap, 0), d_out(n * 4, 0), d_status(4, 0);
  upload(d_payload.get(), buffer.data(), cap);
  upload(d_out.get(), out->data(), n * 4);
  decode_device_async(d_payload.get(), cap, expected, reinterpret_cast<float*>(d_out.get()), n,
                      reinterpret_cast<uint32_t*>(d_status.get()), mode);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  download(out->data(), d_out.get(), n * 4);
  uint32_t status = 0xDEAD;
  download(&status, d_status.get(), 4);
  return status;
}

TEST(CudaDecodeAsync, MatchesCpuAndLeavesTheOutputOfCorruptPayloads) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : all_data_types())
    for (size_t n : kSizes)
      for (DecodeMode mode : {DecodeMode::kOverwrite, DecodeMode::kAccumulate}) {
        CodecOptions o;
        o.type = type;
        const auto payload =
            encode(make_input(n, 5, n > 100, type == DataType::kDynamicUnsigned), o);
        const std::vector<float> start = make_input(n, 99, false, false);
        std::vector<float> want = start, got = start;
        decode(payload.data(), payload.size(), want.data(), n, mode);
        EXPECT_EQ(gpu_decode_async(payload, o, n, mode, &got), 0u)
            << data_type_name(type) << " n=" << n;
        expect_same_floats(want, got);
      }
  CodecOptions o;
  const size_t n = 5000;
  auto payload = encode(make_input(n, 5, true, false), o);
  const std::vector<float> start = make_input(n, 99, false, false);
  std::vector<float> got = start;
  std::vector<uint8_t> bad = payload;
  bad[32 + 3] = 0x7f, bad[32 + 2] = 0xc0;  // the first scale becomes a NaN
  EXPECT_EQ(gpu_decode_async(bad, o, n, DecodeMode::kOverwrite, &got), 2u);
  expect_same_floats(start, got);
  CodecOptions other = o;
  other.type = DataType::kLinear;  // not what was sent: the header does not match
  EXPECT_EQ(gpu_decode_async(payload, other, n, DecodeMode::kOverwrite, &got), 1u);
  expect_same_floats(start, got);
}

TEST(CudaDecode, MatchesCpuForEveryTypeSizeAndMode) {
  SKIP_WITHOUT_DEVICE();
  for (DataType type : all_data_types()) {
    for (size_t n : kSizes) {
      CodecOptions o;
      o.type = type;
      o.checksum = (n % 2) == 1;
      const auto x = make_input(n, 21, n > 100, type == DataType::kDynamicUnsigned);
      const auto payload = encode(x, o);
      for (DecodeMode mode : {DecodeMode::kOverwrite, DecodeMode::kAccumulate}) {
        SCOPED_TRACE(std::string(data_type_name(type)) + " n=" + std::to_string(n));
        expect_decode_matches(payload, n, mode, true, 0);
        expect_decode_matches(payload, n, mode, false, 0);
        expect_decode_matches(payload, n, mode, true, 2);
      }
    }
  }
}

TEST(CudaDecode, RejectsCorruptPayloadWithoutTouchingOutput) {
  SKIP_WITHOUT_DEVICE();
  CodecOptions o;
  o.checksum = true;
  const size_t n = 1000;
  auto payload = encode(make_input(n, 4, false, false), o);
  payload[100] ^= 0x40;  // a code byte: only the CRC sees it
  const std::vector<float> sentinel(n, 42.0f);
  DeviceBytes d_out(n * 4, 0);
  upload(d_out.get(), sentinel.data(), n * 4);
  float* out = reinterpret_cast<float*>(d_out.get());
  for (bool on_device : {false, true}) {
    DeviceBytes d_payload(payload.size(), 0);
    upload(d_payload.get(), payload.data(), payload.size());
    const uint8_t* p = on_device ? d_payload.get() : payload.data();
    try {
      decode_device(p, payload.size(), out, n);
      ADD_FAILURE() << "corrupt payload accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorruptPayload) << e.what();
    }
    try {
      decode_device(p, payload.size(), out, n - 1);
      ADD_FAILURE() << "wrong count accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kMismatch) << e.what();
    }
  }
  std::vector<float> after(n);
  download(after.data(), d_out.get(), n * 4);
  expect_same_floats(sentinel, after);
}

// Host threads sharing one stream: each call enqueues its kernels while it holds the stream's
// workspace, so that the calls of four threads (NaN/Inf in different blocks, sizes that make the
// workspace grow) run one after another on the device, and every payload and decode is the
// CPU's. Were the kernels of two calls interleaved, one call's flags or count would be the other's.
TEST(CudaAsync, ThreadsSharingAStreamGetTheirOwnResults) {
  SKIP_WITHOUT_DEVICE();
  cudaStream_t stream;
  cuda_ok(cudaStreamCreate(&stream));
  auto work = [stream](uint32_t t) {
    CodecOptions o;
    const size_t n = 100000 + 40961 * t;
    const std::vector<float> x = make_input(n, 30 + t, true, false);
    const std::vector<uint8_t> want = encode(x, o);
    std::vector<float> want_floats(n);
    decode(want.data(), want.size(), want_floats.data(), n);
    const size_t cap = max_encoded_size(n, o);
    DeviceBytes in(n * 4, 0), out(cap, 0), size(8, 0), back(n * 4, 0), status(4, 0);
    upload(in.get(), x.data(), n * 4);
    for (int round = 0; round < 25; ++round) {
      encode_device_async(reinterpret_cast<const float*>(in.get()), n, o, out.get(), cap,
                          reinterpret_cast<uint64_t*>(size.get()), stream);
      decode_device_async(out.get(), cap, o, reinterpret_cast<float*>(back.get()), n,
                          reinterpret_cast<uint32_t*>(status.get()), DecodeMode::kOverwrite,
                          stream);
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      uint64_t got_size = 0;
      uint32_t verdict = 1;
      download(&got_size, size.get(), sizeof got_size);
      download(&verdict, status.get(), sizeof verdict);
      std::vector<uint8_t> got(got_size);
      download(got.data(), out.get(), got.size());
      std::vector<float> floats(n);
      download(floats.data(), back.get(), n * 4);
      EXPECT_EQ(got, want) << "thread " << t << " round " << round;
      EXPECT_EQ(verdict, 0u) << "thread " << t << " round " << round;
      expect_same_floats(want_floats, floats);
      if (::testing::Test::HasFailure()) return;
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) threads.emplace_back(work, t);
  for (std::thread& th : threads) th.join();
  cudaStreamDestroy(stream);
}

// A device payload without a checksum has its body checked by the device kernels: each broken
// body rule (a NaN scale, a special entry past the last block, a 4-bit padding nibble) is refused
// with the CPU decoder's own message and code, and the output keeps its bytes.
TEST(CudaDecode, RejectsBrokenBodiesCheckedOnTheDevice) {
  SKIP_WITHOUT_DEVICE();
  struct Case {
    const char* name;
    DataType type;
    size_t n;
    void (*breaks)(std::vector<uint8_t>&, size_t n);
  };
  const Case cases[] = {
      {"NaN scale", DataType::kDynamic, 5000,
       [](std::vector<uint8_t>& p, size_t) { p[32 + 3] = 0x7f, p[32 + 2] = 0xc0; }},
      {"special entry past the last block", DataType::kDynamic, 1000,
       [](std::vector<uint8_t>& p, size_t n) { p[32 + 4 + n] = 7; }},  // 1 block: scale, codes
      {"4-bit padding nibble", DataType::kDynamic4, 1001,
       [](std::vector<uint8_t>& p, size_t n) { p[32 + 4 * 8 + n / 2] |= 0x30; }},  // 8 blocks
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CodecOptions o;
    o.type = c.type;
    const std::vector<float> x = make_input(c.n, 6, std::strcmp(c.name, "NaN scale") != 0, false);
    std::vector<uint8_t> bad = encode(x, o);
    c.breaks(bad, c.n);
    std::string cpu_message;
    try {
      std::vector<float> cpu_out(c.n);
      decode(bad.data(), bad.size(), cpu_out.data(), c.n);
      ADD_FAILURE() << "the CPU accepts the broken payload";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorruptPayload);
      cpu_message = e.what();
    }
    const std::vector<float> sentinel(c.n, 42.0f);
    DeviceBytes d_out(c.n * 4, 0), d_payload(bad.size(), 0);
    upload(d_out.get(), sentinel.data(), c.n * 4);
    upload(d_payload.get(), bad.data(), bad.size());
    for (DecodeMode mode : {DecodeMode::kOverwrite, DecodeMode::kAccumulate}) {
      try {
        decode_device(d_payload.get(), bad.size(), reinterpret_cast<float*>(d_out.get()), c.n,
                      mode);
        ADD_FAILURE() << "the device accepts the broken payload";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kCorruptPayload);
        EXPECT_EQ(std::string(e.what()), cpu_message);
      }
    }
    std::vector<float> after(c.n);
    download(after.data(), d_out.get(), c.n * 4);
    expect_same_floats(sentinel, after);
  }
}

// Tensors far larger than the device's resident CUDA blocks, so every grid-stride loop wraps many
// times, with NaN/Inf at random places and at the end, and an odd tail: encode (both entry
// points, nearest and stochastic) and accumulating decode still give the CPU's bytes and floats.
TEST(CudaLarge, ManyBlocksMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  const size_t n = (size_t{1} << 24) + 4099;
  const auto x = make_input(n, 17, true, false);
  for (DataType type : {DataType::kDynamic, DataType::kDynamic4}) {
    for (bool stochastic : {false, true}) {
      CodecOptions o;
      o.type = type;
      o.stochastic = stochastic;
      o.seed = 99;
      const auto cpu = encode(x, o);
      SCOPED_TRACE(std::string(data_type_name(type)) + (stochastic ? " stochastic" : ""));
      ASSERT_GT(inspect(cpu.data(), cpu.size()).special_blocks, 0u);
      ASSERT_EQ(gpu_encode(x, o, {}), cpu);
      ASSERT_EQ(gpu_encode_async(x, o, 0, 0), cpu);
      if (!stochastic) expect_decode_matches(cpu, n, DecodeMode::kAccumulate, true, 0);
    }
  }
}

#endif  // OCTET_HAVE_CUDA

}  // namespace
}  // namespace octet
