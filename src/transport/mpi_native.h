// MPI's own fp32 collectives on the transport's communicator (octet/native_collectives.h).
#pragma once

#include <mpi.h>

#include <memory>

#include "octet/native_collectives.h"

namespace octet {

std::unique_ptr<NativeCollectives> make_mpi_native(MPI_Comm comm);

}  // namespace octet
