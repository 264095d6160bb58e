// The MPI transport (needs mpi.h; only in builds with OCTET_HAVE_MPI). All of its traffic goes
// through PMPI_ entry points, so a PMPI shim (LD_PRELOAD) neither sees nor intercepts it.
#pragma once

#include <mpi.h>

#include <memory>

#include "octet/transport.h"

namespace octet {

// Duplicates comm (PMPI_Comm_dup: collective over comm) with errors returned rather than fatal,
// and wraps the duplicate; the transport frees it when destroyed (if MPI is still initialised).
// Communication happens in the calling thread only, so MPI_THREAD_SINGLE/FUNNELED suffice.
OCTET_API std::shared_ptr<Transport> make_mpi_transport(MPI_Comm comm);

}  // namespace octet
