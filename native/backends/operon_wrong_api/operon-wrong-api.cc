// Refusal-test backend: built "for" TRITONBACKEND API 2.0 (a major version
// Operon does not implement). Its Initialize does what every Triton backend
// does, compare the server's version with the one it was built for, and
// refuses, naming both.
#include <string>

#include "triton/core/tritonbackend.h"

namespace {
constexpr uint32_t kBuiltForMajor = TRITONBACKEND_API_VERSION_MAJOR + 1;
constexpr uint32_t kBuiltForMinor = 0;
}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend*) {
  uint32_t major = 0, minor = 0;
  TRITONSERVER_Error* err = TRITONBACKEND_ApiVersion(&major, &minor);
  if (err != nullptr) return err;
  if (major != kBuiltForMajor || minor < kBuiltForMinor) {
    std::string message = "operon_wrong_api was built for TRITONBACKEND API " + std::to_string(kBuiltForMajor) + "." +
                          std::to_string(kBuiltForMinor) + ", the server implements " + std::to_string(major) + "." +
                          std::to_string(minor);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, message.c_str());
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance*, TRITONBACKEND_Request**,
                                                       const uint32_t) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "operon_wrong_api never executes");
}

}  // extern "C"
