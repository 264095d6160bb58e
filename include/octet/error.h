// Octet's one error-handling style: the C++ API throws octet::Error, which carries an
// ErrorCode; the C, PMPI and NCCL boundaries catch it and return the code instead.
#pragma once

#include <stdexcept>
#include <string>

#include "octet/export.h"

namespace octet {

// Stable numeric values: they cross the C boundary (see octet/octet_c.h).
enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // bad option, null pointer with a non-zero count, bad size
  kCorruptPayload = 2,    // a payload whose bytes do not describe a valid encoding
  kTruncatedPayload = 3,  // fewer bytes than the header says
  kUnsupported = 4,       // valid request that this build or type cannot serve
  kUnavailable = 5,       // a component compiled out (no MPI, no CUDA device ...)
  kMismatch = 6,          // ranks disagree (counts, types, options)
  kTransport = 7,         // the transport failed (MPI error, peer gone)
  kInternal = 8,          // a bug in Octet
};

OCTET_API const char* error_code_name(ErrorCode code) noexcept;

class OCTET_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace octet
