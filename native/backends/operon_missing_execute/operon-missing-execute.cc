// Refusal-test backend: it implements TRITONBACKEND_Initialize but not the
// required TRITONBACKEND_ModelInstanceExecute, so loading it must fail with
// an error naming the missing symbol.
#include "triton/core/tritonbackend.h"

extern "C" TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend*) { return nullptr; }
