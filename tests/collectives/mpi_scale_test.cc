// The compressed collectives at 8 and 16 ranks (mpirun, oversubscribed), with the bytes each rank
// sends counted by a Transport wrapper: allreduce results within the documented bound of the exact
// sum and bit-identical everywhere, and every rank's bytes within docs/algorithms.md's volume:
// allreduce 2(P-1)/P of the compressed vector, reduce_scatter and allgather (P-1) payloads, plus
// the per-message headers.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "octet/collectives.h"
#include "octet/transport_mpi.h"
#include "verify/verify.h"

namespace octet {
namespace {

constexpr double kDescriptorBytes = 40;  // one per peer and call (docs/algorithms.md)
constexpr double kHeaderBytes = 32;      // per payload, i.e. per data message

int world_rank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Forwards to the MPI transport and counts isend calls and their bytes. It forwards nothing else
// on purpose: with the Transport defaults every rank is a host of its own (the flat algorithms,
// whose volume is the one checked) and there is no native fp32 collective to hand calls to.
class CountingTransport : public Transport {
 public:
  explicit CountingTransport(std::shared_ptr<Transport> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int max_tag() const override { return inner_->max_tag(); }
  TransportRequestPtr isend(const void* data, size_t bytes, int peer, int tag,
                            std::shared_ptr<const void> keep_alive) override {
    sends += 1;
    bytes_sent += bytes;
    return inner_->isend(data, bytes, peer, tag, std::move(keep_alive));
  }
  TransportRequestPtr irecv(void* data, size_t capacity, int peer, int tag) override {
    return inner_->irecv(data, capacity, peer, tag);
  }
  void poll() override { inner_->poll(); }

  uint64_t sends = 0, bytes_sent = 0;

 private:
  std::shared_ptr<Transport> inner_;
};

// Compress every call, whatever the library's default policy (the `policy` option, where this
// tree has it: its `auto` default would first measure, and could leave calls to MPI).
template <typename O>
auto compress_always(O& o, int) -> decltype(o.policy = decltype(o.policy)::kAlways, void()) {
  o.policy = decltype(o.policy)::kAlways;
}
template <typename O>
void compress_always(O&, long) {}

CollectiveOptions options(uint32_t block, size_t chunk_bytes) {
  CollectiveOptions o;
  compress_always(o, 0);
  o.codec.block_size = block;
  o.chunk_bytes = chunk_bytes;
  return o;
}

// True when every rank's buffer hashes the same.
bool identical_everywhere(const std::vector<float>& v) {
  const uint64_t h = verify::fingerprint(v.data(), v.size());
  uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

class Scale : public ::testing::Test {
 protected:
  Scale() : counter(std::make_shared<CountingTransport>(make_mpi_transport(MPI_COMM_WORLD))) {}

  // Bytes and sends of one call on this rank.
  template <typename Call>
  std::pair<double, double> count(Call call) {
    const uint64_t b0 = counter->bytes_sent, s0 = counter->sends;
    call();
    return {double(counter->bytes_sent - b0), double(counter->sends - s0)};
  }

  // A payload without its header: what a call's volume is made of, in whatever chunks it goes.
  static double body(size_t n, const CollectiveOptions& o) {
    return double(encoded_size(n, o.codec)) - kHeaderBytes;
  }
  // What docs/algorithms.md allows on top of the payload bodies: a descriptor per peer, a
  // payload header per data message.
  double headers(double sends) const {
    const double peers = comm.size() - 1;
    return peers * kDescriptorBytes + (sends - peers) * kHeaderBytes;
  }

  std::shared_ptr<CountingTransport> counter;
  Comm comm{counter};
  const verify::Inputs inputs{7};
};

TEST_F(Scale, AllreduceBoundIdentityAndBytesPerRank) {
  const int p = comm.size(), me = comm.rank();
  // n = p * 2 blocks splits into equal segments; the odd n gives some ranks a block more.
  for (size_t n : {size_t(p) * 2 * 2048, size_t{50003}}) {
    for (auto [block, chunk] : {std::pair<uint32_t, size_t>{2048, 1 << 20}, {256, 8192}}) {
      const CollectiveOptions o = options(block, chunk);
      const std::vector<float> x = inputs.slice(me, 0, n);
      std::vector<float> y(n);
      const auto [bytes, sends] = count([&] { allreduce(comm, x.data(), y.data(), n, o); });

      const auto want =
          verify::allreduce_reference(verify::source(inputs), p, n, verify::quantization(o, n));
      EXPECT_EQ(verify::compare(y.data(), want).wrong, 0u) << "n=" << n << " block=" << block;
      EXPECT_TRUE(identical_everywhere(y)) << "n=" << n << " block=" << block;

      // Segments are whole blocks: an uneven split gives a rank at most one block more, which it
      // sends P-2 times more than an even share (docs/algorithms.md's sum over segments).
      const double extra_blocks = n % (size_t(p) * block) ? p - 2 : 0;
      const double share = 2.0 * (p - 1) / p;
      const double limit = share * body(n, o) + headers(sends) + extra_blocks * (block + 4.0);
      EXPECT_LE(bytes, limit) << "n=" << n << " block=" << block << " sends=" << sends;
      // And it did compress: about a quarter of what fp32 would need.
      EXPECT_LT(bytes, 0.3 * (share * 4.0 * double(n) + extra_blocks * 4.0 * block));
      if (me == 0)
        std::printf("allreduce P=%d n=%zu block=%u: %.0f bytes in %.0f messages, limit %.0f\n", p,
                    n, block, bytes, sends, limit);
    }
  }
}

TEST_F(Scale, ReduceScatterAndAllgatherBytesPerRank) {
  const int p = comm.size(), me = comm.rank();
  const size_t n = 20000;  // per rank: not whole blocks
  const CollectiveOptions o = options(2048, 1 << 20);
  const verify::Source in = verify::source(inputs);
  const double payload = body(n, o);

  const std::vector<float> x = inputs.slice(me, 0, n * p);
  std::vector<float> part(n);
  const auto rs = count([&] { reduce_scatter(comm, x.data(), part.data(), n, o); });
  EXPECT_EQ(verify::compare(part.data(), verify::reduce_scatter_reference(
                                             in, p, me, n, verify::quantization(o, n)))
                .wrong,
            0u);
  EXPECT_LE(rs.first, (p - 1) * payload + headers(rs.second));

  std::vector<float> all(n * p);
  const auto ag = count([&] { allgather(comm, x.data(), all.data(), n, o); });
  EXPECT_TRUE(identical_everywhere(all));
  EXPECT_EQ(
      verify::compare(all.data(), verify::allgather_reference(in, p, n, verify::quantization(o, n)))
          .wrong,
      0u);
  EXPECT_LE(ag.first, (p - 1) * payload + headers(ag.second));
}

// Other ranks print only their failures, with their rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", world_rank(), r.file_name() ? r.file_name() : "",
                   r.line_number(), r.summary());
  }
};

}  // namespace
}  // namespace octet

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  if (octet::world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new octet::FailurePrinter);
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
