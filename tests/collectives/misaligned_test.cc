// Buffers at any byte address, as an MPI program may pass them (the PMPI shim hands them on as
// they come): every operation gives the same bytes as with aligned buffers, compressed or not.
// Under UBSan (-fsanitize=alignment) a float load through a misaligned pointer fails this test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "octet/collectives.h"
#include "thread_ranks.h"
#include "verify/verify.h"

namespace octet {
namespace {

// A float array at `offset` bytes past an aligned allocation.
class Buffer {
 public:
  Buffer(size_t n, size_t offset) : bytes_(n * sizeof(float) + 8), offset_(offset), n_(n) {}
  float* data() { return reinterpret_cast<float*>(bytes_.data() + offset_); }
  void set(const std::vector<float>& v) {
    if (!v.empty()) std::memcpy(bytes_.data() + offset_, v.data(), v.size() * sizeof(float));
  }
  std::vector<float> get() const {
    std::vector<float> v(n_);
    if (n_) std::memcpy(v.data(), bytes_.data() + offset_, n_ * sizeof(float));
    return v;
  }

 private:
  std::vector<unsigned char> bytes_;
  size_t offset_, n_;
};

using Body = std::function<std::vector<float>(Comm&, size_t offset)>;

// Each rank's result of body over p thread ranks.
std::vector<std::vector<float>> run(int p, size_t offset, const Body& body) {
  std::vector<std::vector<float>> out(p);
  const auto errors = test::run_on_threads(p, [&](Comm& c) { out[c.rank()] = body(c, offset); });
  for (int r = 0; r < p; ++r) EXPECT_FALSE(errors[r]) << "rank " << r << " failed";
  return out;
}

// The same bytes at offsets 1 and 3 as at offset 0, compressed (dynamic and dynamic_unsigned,
// whose sign check reads the input) and uncompressed.
void expect_alignment_free(const char* what, const Body& body) {
  const auto aligned = run(3, 0, body);
  for (size_t offset : {1, 3})
    for (size_t r = 0; r < aligned.size(); ++r)
      EXPECT_EQ(0, std::memcmp(aligned[r].data(), run(3, offset, body)[r].data(),
                               aligned[r].size() * sizeof(float)))
          << what << ": offset " << offset << ", rank " << r;
}

std::vector<CollectiveOptions> variants() {
  CollectiveOptions compressed, unsigned_type, exact;
  compressed.policy = unsigned_type.policy = exact.policy = Policy::kAlways;
  compressed.codec.block_size = 64;
  compressed.chunk_bytes = 4 * 256;
  unsigned_type = compressed;
  unsigned_type.codec.type = DataType::kDynamicUnsigned;
  exact.min_bytes = size_t{1} << 30;
  return {compressed, unsigned_type, exact};
}

std::vector<float> data(int rank, size_t n, bool non_negative) {
  std::vector<float> v = verify::input(rank, n, 7);
  if (non_negative)
    for (float& x : v) x = std::fabs(x);
  return v;
}

TEST(Misaligned, EveryOperationGivesTheAlignedBytes) {
  const size_t n = 1000;
  for (const CollectiveOptions& o : variants()) {
    const bool unsigned_data = o.codec.type == DataType::kDynamicUnsigned;
    expect_alignment_free("allreduce", [&](Comm& c, size_t off) {
      Buffer in(n, off), out(n, off);
      in.set(data(c.rank(), n, unsigned_data));
      allreduce(c, in.data(), out.data(), n, o);
      return out.get();
    });
    expect_alignment_free("allreduce in place", [&](Comm& c, size_t off) {
      Buffer x(n, off);
      x.set(data(c.rank(), n, unsigned_data));
      allreduce(c, nullptr, x.data(), n, o);
      return x.get();
    });
    expect_alignment_free("reduce_scatter", [&](Comm& c, size_t off) {
      Buffer in(n * c.size(), off), out(n, off);
      in.set(data(c.rank(), n * c.size(), unsigned_data));
      reduce_scatter(c, in.data(), out.data(), n, o);
      return out.get();
    });
    expect_alignment_free("allgather", [&](Comm& c, size_t off) {
      Buffer in(n, off), out(n * c.size(), off);
      in.set(data(c.rank(), n, unsigned_data));
      allgather(c, in.data(), out.data(), n, o);
      return out.get();
    });
    expect_alignment_free("broadcast", [&](Comm& c, size_t off) {
      Buffer x(n, off);
      x.set(data(c.rank(), n, unsigned_data));
      broadcast(c, x.data(), n, 1, o);
      return x.get();
    });
  }
}

}  // namespace
}  // namespace octet
