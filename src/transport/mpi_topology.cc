// Host ids of an MPI communicator: one MPI_Comm_split_type and two small collectives, once per
// transport (at construction), so that the collectives can ask host_of() for free.
#include "transport/mpi_topology.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "octet/detail/hash.h"
#include "octet/error.h"
#include "transport/mpi_error.h"

namespace octet {
namespace {

// The lowest rank of comm that shares memory with this one.
int lowest_rank_on_host(MPI_Comm comm, int rank) {
  MPI_Comm shared = MPI_COMM_NULL;
  check_mpi(PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared),
            "MPI_Comm_split_type");
  int lowest = rank;
  const int rc = PMPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, shared);
  PMPI_Comm_free(&shared);
  check_mpi(rc, "MPI_Allreduce (host ids)");
  return lowest;
}

}  // namespace

std::vector<int> mpi_host_ids(MPI_Comm comm) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  // Whether any rank has the override decides, on every rank alike, whether to split at all
  // (the split is collective).
  const char* id = std::getenv("OCTET_HOST_ID");
  const int mine = id && *id ? 1 : 0;
  int any = 0;
  check_mpi(PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce (host ids)");
  uint64_t key;
  if (!any)
    key = static_cast<uint64_t>(lowest_rank_on_host(comm, rank));
  else if (mine)  // the top bit keeps hashed names apart from rank numbers
    key = detail::fnv1a64(id, std::strlen(id)) | (uint64_t{1} << 63);
  else  // a rank without the override: a host of its own
    key = static_cast<uint64_t>(rank);
  std::vector<uint64_t> keys(static_cast<size_t>(size));
  check_mpi(PMPI_Allgather(&key, 1, MPI_UINT64_T, keys.data(), 1, MPI_UINT64_T, comm),
            "MPI_Allgather (host ids)");
  std::map<uint64_t, int> first;  // key -> its lowest rank
  std::vector<int> hosts;
  for (int r = 0; r < size; ++r)
    hosts.push_back(first.emplace(keys[static_cast<size_t>(r)], r).first->second);
  return hosts;
}

}  // namespace octet
