// The MPI transport layer's one way to turn an MPI error code into octet::Error.
#pragma once

#include <mpi.h>

#include <string>

#include "octet/error.h"

namespace octet {

// Throws octet::Error (kTransport) naming `what` and MPI's message, unless rc is MPI_SUCCESS.
inline void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  PMPI_Error_string(rc, text, &length);
  throw Error(ErrorCode::kTransport, std::string(what) + ": " + text);
}

}  // namespace octet
