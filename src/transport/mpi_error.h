// The MPI transport layer's one way to turn an MPI error code into octet::Error.
#pragma once

#include <mpi.h>

#include <string>

#include "octet/error.h"

namespace octet {

// Throws octet::Error (kTransport) naming `what` and MPI's message.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_mpi_error(int rc, const char* what) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  PMPI_Error_string(rc, text, &length);
  throw Error(ErrorCode::kTransport, std::string(what) + ": " + text);
}

// throw_mpi_error unless rc is MPI_SUCCESS: the test inline at every call, the message out of line.
inline void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw_mpi_error(rc, what);
}

}  // namespace octet
