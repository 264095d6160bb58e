/* Creating an Octet communicator over an MPI communicator (needs mpi.h; OCTET_HAVE_MPI). */
#ifndef OCTET_OCTET_MPI_H_
#define OCTET_OCTET_MPI_H_

#include <mpi.h>

#include "octet/octet_c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Duplicates comm (with PMPI_Comm_dup, so Octet's traffic never mixes with the application's and
 * a PMPI shim does not see it) and wraps it. Collective over comm. All of Octet's MPI traffic goes
 * through PMPI_ entry points. Free with octet_comm_free (collective as well). */
OCTET_API octet_status octet_comm_from_mpi(MPI_Comm comm, octet_comm* out);

#ifdef __cplusplus
}
#endif

#endif /* OCTET_OCTET_MPI_H_ */
