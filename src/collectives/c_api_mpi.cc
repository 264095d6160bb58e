// octet_comm_from_mpi (octet/octet_mpi.h): a C communicator over the MPI transport.
#include "collectives/c_comm.h"
#include "octet/octet_mpi.h"
#include "octet/transport_mpi.h"

extern "C" octet_status octet_comm_from_mpi(MPI_Comm comm, octet_comm* out) {
  if (out) *out = nullptr;
  octet_comm made = nullptr;
  const octet_status s = octet::detail::guard([&] {
    if (!out) throw octet::Error(octet::ErrorCode::kInvalidArgument, "null communicator pointer");
    auto transport = octet::make_mpi_transport(comm);
    const octet_status w = octet::detail::wrap_comm(transport, &made);
    if (w != OCTET_OK) throw octet::Error(static_cast<octet::ErrorCode>(w), "wrapping failed");
  });
  if (s == OCTET_OK) *out = made;
  return s;
}
