// The MPI transport's topology (Transport::host_of) and the hierarchical allreduce over it, under
// mpirun. All ranks of a CTest run share one machine, so the real topology is one host (where
// allreduce stays flat); the OCTET_HOST_ID override then splits the ranks into two emulated hosts
// (ranks [0, P/2) and [P/2, P)) so that the hierarchical path runs over real MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "counting_transport.h"
#include "mpi_test_main.h"
#include "octet/collectives.h"
#include "octet/policy.h"
#include "octet/transport_mpi.h"
#include "verify/verify.h"

namespace octet {
namespace {

using test::CountingTransport;
using test::identical_everywhere;
using test::world_rank;
using test::world_size;

using verify::input;
using Algorithm = CollectiveOptions::AllreduceAlgorithm;

// A transport over MPI_COMM_WORLD with OCTET_HOST_ID set to `id` ("" unsets it) while it is made.
std::shared_ptr<Transport> transport_with_host_id(const char* id) {
  if (*id)
    setenv("OCTET_HOST_ID", id, 1);
  else
    unsetenv("OCTET_HOST_ID");
  auto t = make_mpi_transport(MPI_COMM_WORLD);
  unsetenv("OCTET_HOST_ID");
  return t;
}

const char* half() {
  return world_rank() < world_size() / 2 ? "first-half" : "second-half";
}

TEST(MpiTopology, SharedMemoryHostsAgreeWithSplitType) {
  auto t = transport_with_host_id("");
  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  int local = 0;
  MPI_Comm_size(shared, &local);
  MPI_Comm_free(&shared);
  int same = 0;
  for (int r = 0; r < world_size(); ++r) same += t->host_of(r) == t->host_of(world_rank());
  EXPECT_EQ(same, local);
  std::vector<int> mine, all(static_cast<size_t>(world_size() * world_size()));
  for (int r = 0; r < world_size(); ++r) mine.push_back(t->host_of(r));
  MPI_Allgather(mine.data(), world_size(), MPI_INT, all.data(), world_size(), MPI_INT,
                MPI_COMM_WORLD);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], mine[i % mine.size()]);
}

TEST(MpiTopology, HostIdOverride) {
  auto t = transport_with_host_id(half());
  const int p = world_size();
  for (int r = 0; r < p; ++r) EXPECT_EQ(t->host_of(r), r < p / 2 ? 0 : p / 2) << r;
}

// Over two emulated hosts: within the flat bound, bit-identical, the same bytes as forcing the
// hierarchical algorithm, and (with 2 ranks on each host) half the bytes between hosts.
TEST(MpiHierarchical, AllreduceOverEmulatedHosts) {
  const int p = world_size(), me = world_rank();
  auto counting = std::make_shared<CountingTransport>(transport_with_host_id(half()));
  Comm comm(counting);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2053}, size_t{300007}}) {
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < p; ++r) inputs.push_back(input(r, n, n + 1));
    CollectiveOptions o;
    o.policy = Policy::kAlways;  // a declined call would be MPI's own
    o.codec.block_size = 256;
    o.chunk_bytes = 64 * 1024;
    std::vector<float> y(n), forced = inputs[me], flat(n);
    counting->between_hosts = 0;
    allreduce(comm, inputs[me].data(), y.data(), n, o);
    const size_t hierarchical_bytes = counting->between_hosts;
    o.allreduce_algorithm = Algorithm::kHierarchical;
    allreduce(comm, forced.data(), forced.data(), n, o);  // in place
    o.allreduce_algorithm = Algorithm::kFlat;
    counting->between_hosts = 0;
    allreduce(comm, inputs[me].data(), flat.data(), n, o);
    const auto want = verify::allreduce_reference(verify::source(inputs), p, n,
                                                  {bound_fraction(DataType::kDynamic), 256});
    EXPECT_EQ(verify::compare(y.data(), want).wrong, 0u) << "n=" << n;
    EXPECT_TRUE(identical_everywhere(y)) << "n=" << n;
    if (p > 2) {  // 2 ranks: one per host, so auto is flat
      EXPECT_EQ(y, forced) << "n=" << n;
    }
    if (p == 4 && n > 100000) {
      EXPECT_NEAR(static_cast<double>(hierarchical_bytes) / counting->between_hosts, 0.5, 0.02);
    }
  }
}

// Every rank's doubles are rank 0's.
bool same_everywhere(std::vector<double> v) {
  std::vector<double> first = v;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int same = first == v, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// `auto` over two emulated hosts: measured, then seeded, every rank estimates and chooses alike
// (the algorithm too), and a seeded choice of the hierarchical algorithm runs it.
TEST(MpiHierarchical, AutoChoosesTheAlgorithmByCostAlike) {
  const int p = world_size(), me = world_rank();
  Comm comm(transport_with_host_id(half()));
  std::vector<double> seen;
  for (size_t n : {size_t{1000}, size_t{300007}}) {
    const PolicyEstimate e = estimate_policy(comm, Collective::kAllreduce, n, {});
    seen.insert(seen.end(), {double(e.compress), double(e.hierarchical), e.plain_seconds,
                             e.compressed_seconds});
  }
  EXPECT_TRUE(same_everywhere(seen));
  PolicyCurves c;  // plain dear; hierarchical cheaper than flat from 12.7 MB on
  c.bytes = {4, 1e12};
  c.plain_seconds = {1, 1e4};
  c.compressed_seconds = {1e-3, 1e-3 + 1e12 / 4e8};
  c.hierarchical_seconds = {2e-2, 2e-2 + 1e12 / 1e9};
  set_policy_curves(comm, Collective::kAllreduce, CodecOptions{}, c);
  const size_t n = 6000001;  // 24 MB
  EXPECT_EQ(estimate_policy(comm, Collective::kAllreduce, n, {}).hierarchical, p > 2);
  std::vector<float> x = input(me, n, 9), y(n), forced(n);
  allreduce(comm, x.data(), y.data(), n);
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.allreduce_algorithm = p > 2 ? Algorithm::kHierarchical : Algorithm::kFlat;
  allreduce(comm, x.data(), forced.data(), n, o);
  EXPECT_TRUE(identical_everywhere(y));
  EXPECT_EQ(y, forced);
}

TEST(MpiHierarchical, AverageAndMismatch) {
  const int p = world_size(), me = world_rank();
  Comm comm(transport_with_host_id(half()));
  const size_t n = 5001;
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < p; ++r) inputs.push_back(input(r, n, 7));
  CollectiveOptions o;
  o.policy = Policy::kAlways;
  o.average = true;
  std::vector<float> y = inputs[me];
  allreduce(comm, y.data(), y.data(), n, o);
  const auto want = verify::allreduce_reference(verify::source(inputs), p, n,
                                                {bound_fraction(DataType::kDynamic), 2048}, true);
  EXPECT_EQ(verify::compare(y.data(), want).wrong, 0u);
  EXPECT_TRUE(identical_everywhere(y));

  CollectiveOptions mixed = o;  // the last rank forces the flat algorithm
  if (me == p - 1) mixed.allreduce_algorithm = Algorithm::kFlat;
  try {
    allreduce(comm, y.data(), y.data(), n, mixed);
    if (p > 2) ADD_FAILURE() << "no error";  // with 1 rank per host, auto is flat too
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMismatch) << e.what();
  }
  std::vector<float> z(10, 1.0f);
  o.average = false;
  allreduce(comm, z.data(), z.data(), z.size(), o);
  EXPECT_EQ(z, std::vector<float>(10, static_cast<float>(p)));
}

}  // namespace
}  // namespace octet

int main(int argc, char** argv) {
  return octet::test::run_mpi_tests(argc, argv);
}
