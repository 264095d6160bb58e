// Which host each rank of an MPI communicator is on, for Transport::host_of.
#pragma once

#include <mpi.h>

#include <vector>

namespace octet {

// host[r] for every rank r of comm: the lowest rank on r's host, so equal ids = same host.
// Collective over comm. A host is what MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) says, unless
// the environment variable OCTET_HOST_ID is set on some rank: then ranks with the same value
// share a host and ranks without it are each on a host of their own (tests of the hierarchical
// path on one machine, or an MPI whose shared-memory split is wrong). Throws octet::Error
// (kTransport) when MPI fails.
std::vector<int> mpi_host_ids(MPI_Comm comm);

}  // namespace octet
