// The collectives over the MPI transport, run by mpirun from CTest with 2, 3 and 4 ranks and the
// ob1/tcp and UCX PMLs. Checks against the exact sum within the bound derived from
// bound_fraction, bit-identity across ranks (allgathered hashes), mismatches, the C API.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "counting_transport.h"
#include "mpi_test_main.h"
#include "octet/collectives.h"
#include "octet/octet_mpi.h"
#include "octet/policy.h"
#include "octet/transport_mpi.h"
#include "verify/verify.h"

namespace octet {
namespace {

using test::identical_everywhere;
using test::world_rank;
using test::world_size;

using verify::input;

// Elements of `got` outside the bound of `want`.
uint64_t wrong(const std::vector<float>& got, const verify::Reference& want) {
  return verify::compare(got.data(), want).wrong;
}

std::vector<std::vector<float>> all_inputs(size_t n, uint64_t seed) {
  std::vector<std::vector<float>> in;
  for (int r = 0; r < world_size(); ++r) in.push_back(input(r, n, seed));
  return in;
}

class Mpi : public ::testing::Test {
 protected:
  Comm comm{make_mpi_transport(MPI_COMM_WORLD)};
};

// The eager limit the transport reports follows the message layer (octet/transport.h): OpenMPI's
// ob1 64 KiB, anything else (UCX) 16 KiB. CTest names the layer in OCTET_TEST_PML.
TEST_F(Mpi, EagerBytesFollowTheMessageLayer) {
  const char* pml = std::getenv("OCTET_TEST_PML");
  if (pml == nullptr) GTEST_SKIP() << "OCTET_TEST_PML is not set";
  EXPECT_EQ(comm.transport().eager_bytes(),
            std::string(pml) == "ob1" ? kMpiEagerBytes : kMpiSmallEagerBytes);
}

TEST_F(Mpi, AllreduceWithinBoundAndBitIdentical) {
  const int p = comm.size();
  for (size_t n : {size_t{0}, size_t{1}, size_t{2053}, size_t{300007}}) {
    for (bool small : {false, true}) {
      CollectiveOptions o;
      o.policy = Policy::kAlways;
      if (small) {
        o.codec.block_size = 256;
        o.chunk_bytes = 4096;
      }
      const auto inputs = all_inputs(n, n + 1);
      std::vector<float> y(n);
      allreduce(comm, inputs[comm.rank()].data(), y.data(), n, o);
      const uint32_t block = small ? 256 : 2048;
      const auto want = verify::allreduce_reference(verify::source(inputs), p, n,
                                                    {bound_fraction(DataType::kDynamic), block});
      EXPECT_EQ(wrong(y, want), 0u) << "n=" << n;
      EXPECT_TRUE(identical_everywhere(y)) << "n=" << n;
    }
  }
}

// A call left uncompressed (below min_bytes, or `never`) is MPI's own allreduce: the same bits as
// MPI_Allreduce, divided by the rank count for `average`.
TEST_F(Mpi, AllreduceAverageInPlaceUncompressedIsMpisOwn) {
  const int p = comm.size();
  const size_t n = 999;
  const auto inputs = all_inputs(n, 3);
  std::vector<float> want = inputs[comm.rank()];
  PMPI_Allreduce(MPI_IN_PLACE, want.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (Policy policy : {Policy::kAlways, Policy::kNever, Policy::kAuto}) {
    std::vector<float> y = inputs[comm.rank()];
    CollectiveOptions o;
    o.policy = policy;
    o.average = true;
    o.min_bytes = 1 << 20;
    allreduce(comm, y.data(), y.data(), n, o);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], want[i] / static_cast<float>(p)) << policy_name(policy) << " " << i;
  }
}

TEST_F(Mpi, ReduceScatterAllgatherBroadcast) {
  const int p = comm.size(), me = comm.rank();
  const size_t n = 4099;
  const verify::Quantization q{bound_fraction(DataType::kDynamic), 2048};
  const auto inputs = all_inputs(n * p, 4);
  const verify::Source in = verify::source(inputs);
  std::vector<float> part(n);
  reduce_scatter(comm, inputs[me].data(), part.data(), n);
  EXPECT_EQ(wrong(part, verify::reduce_scatter_reference(in, p, me, n, q)), 0u);

  std::vector<float> all(n * p);
  allgather(comm, inputs[me].data(), all.data(), n);
  EXPECT_TRUE(identical_everywhere(all));
  EXPECT_EQ(wrong(all, verify::allgather_reference(in, p, n, q)), 0u);

  std::vector<float> b = me == p - 1 ? inputs[me] : std::vector<float>(n * p);
  broadcast(comm, b.data(), n * p, p - 1);
  EXPECT_TRUE(identical_everywhere(b));
  EXPECT_EQ(wrong(b, verify::broadcast_reference(in, p, p - 1, n * p, q)), 0u);
}

TEST_F(Mpi, SendRecvRingNonBlocking) {
  const int p = comm.size(), me = comm.rank();
  const size_t n = 100000;
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.chunk_bytes = 64 * 1024;
  const std::vector<float> x = input(me, n, 5);
  std::vector<float> y(n);
  Request r = irecv(comm, y.data(), n, (me + p - 1) % p, 3, o);
  Request s = isend(comm, x.data(), n, (me + 1) % p, 3, o);
  r.wait();
  s.wait();
  const auto want = verify::send_recv_reference(verify::source(verify::Inputs{5}), (me + p - 1) % p,
                                                n, {bound_fraction(DataType::kDynamic), 2048});
  EXPECT_EQ(wrong(y, want), 0u);
}

TEST_F(Mpi, MismatchedCountsFailEverywhereAndTheCommStaysUsable) {
  const size_t n = comm.rank() == 1 ? 1000 : 1001;
  std::vector<float> x(1001, 1.0f);
  CollectiveOptions o;
  o.policy = Policy::kAlways;  // a declined call would be MPI's, with MPI's semantics
  try {
    allreduce(comm, x.data(), x.data(), n, o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMismatch) << e.what();
  }
  std::vector<float> y(10, 1.0f);
  allreduce(comm, y.data(), y.data(), 10, o);
  EXPECT_NEAR(y[0], comm.size(), 0.05);
}

// `auto` under mpirun: every rank holds the same measured curves, so decides the same for every
// size; its calls (compressed or MPI's own) end within the bound and bit-identical, blocking and
// non-blocking, also after an agreement on observed times.
TEST_F(Mpi, AutoDecidesTheSameOnEveryRank) {
  const int p = comm.size();
  std::vector<double> mine;
  for (size_t n = 1; n <= (size_t{1} << 24); n *= 4) {
    const PolicyEstimate e = estimate_policy(comm, Collective::kAllreduce, n, {});
    mine.insert(mine.end(), {e.compress ? 1.0 : 0.0, e.plain_seconds, e.compressed_seconds});
  }
  std::vector<double> all(mine.size() * p);
  PMPI_Allgather(mine.data(), int(mine.size()), MPI_DOUBLE, all.data(), int(mine.size()),
                 MPI_DOUBLE, MPI_COMM_WORLD);
  for (int r = 1; r < p; ++r)
    for (size_t i = 0; i < mine.size(); ++i) ASSERT_EQ(all[r * mine.size() + i], all[i]) << i;
  for (int call = 0; call < kPolicySyncCalls + 4; ++call) {
    const size_t n = call % 3 == 0 ? 70001 : 33;
    std::vector<float> x = input(comm.rank(), n, 9), y(n);
    if (call % 2)
      allreduce(comm, x.data(), y.data(), n);
    else
      iallreduce(comm, x.data(), y.data(), n).wait();
    const auto want = verify::allreduce_reference(verify::source(verify::Inputs{9}), p, n,
                                                  verify::quantization(CollectiveOptions{}, n));
    ASSERT_EQ(wrong(y, want), 0u) << "call " << call;
    const uint64_t h = verify::fingerprint(y.data(), n);
    uint64_t lo = 0, hi = 0;
    PMPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    ASSERT_EQ(lo, hi) << "call " << call;
  }
}

// Seeded so that `auto` declines (plain 60 ms, compressed 100 ms: within 2x, so explored every
// interval). Repeated declined calls go to MPI's call with little of the routing
// (policy.cc, ran_quiet_decline), which must still count them toward every agreement and
// step aside for exploring: else compression is never re-timed, or the ranks drift apart.
TEST_F(Mpi, RepeatedDeclinedCallsStillAgreeAndExplore) {
  const size_t n = 256;
  PolicyCurves seeded;
  seeded.bytes = {4, std::ldexp(1.0, 40)};
  seeded.plain_seconds = {0.06, 0.06};
  seeded.compressed_seconds = {0.1, 0.1};
  set_policy_curves(comm, Collective::kAllreduce, CodecOptions{}, seeded);
  ASSERT_FALSE(estimate_policy(comm, Collective::kAllreduce, n, {}).compress);
  std::vector<float> x(n, 1.0f), y(n);
  for (int call = 0; call < 2 * kPolicySyncMaxCalls + 8; ++call)
    allreduce(comm, x.data(), y.data(), n);
  const PolicyEstimate e = estimate_policy(comm, Collective::kAllreduce, n, {});
  EXPECT_LT(e.compressed_seconds, 0.01) << "compression was not re-timed";
  EXPECT_LT(e.plain_seconds, 0.01) << "the plain call was not timed";
  const double mine[2] = {e.compressed_seconds, e.plain_seconds};
  double lo[2], hi[2];
  PMPI_Allreduce(mine, lo, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  PMPI_Allreduce(mine, hi, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo[0], hi[0]);
  EXPECT_EQ(lo[1], hi[1]);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], float(comm.size())) << i;
}

// Seeded far too cheap (1 ns), the plain call is declined into again and again; a time seen
// slower than believed counts only from kMinObservations calls per agreement interval, so the
// repeated calls must still be timed until there are that many (settle(): wants_time), else the
// 1 ns would stand.
TEST_F(Mpi, RepeatedDeclinedCallsAreTimedUntilSlowerTimesCount) {
  const size_t n = 256;
  PolicyCurves seeded;
  seeded.bytes = {4, std::ldexp(1.0, 40)};
  seeded.plain_seconds = {1e-9, 1e-9};
  seeded.compressed_seconds = {1.0, 1.0};
  set_policy_curves(comm, Collective::kAllreduce, CodecOptions{}, seeded);
  std::vector<float> x(n, 1.0f), y(n);
  for (int call = 0; call < 4 * kPolicySyncCalls; ++call) allreduce(comm, x.data(), y.data(), n);
  const PolicyEstimate e = estimate_policy(comm, Collective::kAllreduce, n, {});
  EXPECT_FALSE(e.compress);
  EXPECT_GT(e.plain_seconds, 1e-8) << "the plain call's slower times were not folded in";
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], float(comm.size())) << i;
}

TEST_F(Mpi, CApi) {
  octet_comm c = nullptr;
  ASSERT_EQ(octet_comm_from_mpi(MPI_COMM_WORLD, &c), OCTET_OK);
  int rank = -1, size = 0;
  octet_comm_rank(c, &rank);
  octet_comm_size(c, &size);
  EXPECT_EQ(rank, world_rank());
  EXPECT_EQ(size, world_size());
  const size_t n = 5000;
  std::vector<float> x = input(rank, n, 6), y(n), z(n);
  octet_options o;
  octet_options_init(&o);
  o.policy = OCTET_POLICY_ALWAYS;
  EXPECT_EQ(octet_allreduce(c, x.data(), y.data(), n, &o), OCTET_OK);
  octet_request req = nullptr;
  ASSERT_EQ(octet_iallreduce(c, x.data(), z.data(), n, &o, &req), OCTET_OK);
  EXPECT_EQ(octet_wait(&req), OCTET_OK);
  EXPECT_EQ(req, nullptr);
  EXPECT_EQ(y, z);
  EXPECT_TRUE(identical_everywhere(y));
  const size_t bad = rank == 0 ? n - 1 : n;
  EXPECT_EQ(octet_allreduce(c, x.data(), y.data(), bad, &o), OCTET_ERR_MISMATCH)
      << octet_last_error_message();
  EXPECT_EQ(octet_comm_free(c), OCTET_OK);
}

}  // namespace
}  // namespace octet

int main(int argc, char** argv) {
  return octet::test::run_mpi_tests(argc, argv);
}
