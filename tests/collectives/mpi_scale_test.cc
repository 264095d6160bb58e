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

#include "counting_transport.h"
#include "mpi_test_main.h"
#include "octet/collectives.h"
#include "octet/transport_mpi.h"
#include "verify/verify.h"

namespace octet {
namespace {

using test::CountingTransport;
using test::world_rank;
using test::world_size;

constexpr double kDescriptorBytes = 40;  // one per peer and call (docs/algorithms.md)
constexpr double kHeaderBytes = 32;      // per payload, i.e. per data message

CollectiveOptions options(uint32_t block, size_t chunk_bytes) {
  CollectiveOptions o;
  o.policy = Policy::kAlways;  // the default `auto` might leave calls to MPI
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
  // payload header per message (a small call's first payload travels with its descriptor).
  double headers(double sends) const {
    const double peers = comm.size() - 1;
    return peers * kDescriptorBytes + sends * kHeaderBytes;
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

}  // namespace
}  // namespace octet

int main(int argc, char** argv) {
  return octet::test::run_mpi_tests(argc, argv);
}
