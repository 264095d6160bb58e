// Names of the error codes (include/octet/error.h): the one table behind octet::error_code_name,
// octet_status_string and the shims' messages.
#include "octet/error.h"

namespace octet {

const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kCorruptPayload:
      return "corrupt payload";
    case ErrorCode::kTruncatedPayload:
      return "truncated payload";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kMismatch:
      return "mismatch across ranks";
    case ErrorCode::kTransport:
      return "transport error";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown error";
}

}  // namespace octet
