// What a failed CUDA call means for the person loading the model: the hint
// operon_cuda's errors end with (operon-cuda.cu CudaError). Plain C++ with
// CUDA's error numbers (stable parts of CUDA's ABI), so the test host checks
// the wording without CUDA (cuda-selftest --cpu-only).
#pragma once

#include <string>

namespace operon_cuda {

// cudaError_t values the hint distinguishes (operon-cuda.cu static_asserts them).
constexpr int kCudaErrorInsufficientDriver = 35;
constexpr int kCudaErrorNoDevice = 100;

// "12.4" for CUDA's version number 12040.
std::string CudaVersionString(int version);

// The hint for CUDA error `code` ("" when there is nothing to add, else it
// starts with "; "). runtime_version: CUDART_VERSION of the build;
// driver_version: cudaDriverGetVersion's answer (0: no driver installed,
// libcuda.so.1 not found). cudaErrorInsufficientDriver is CUDA's answer to
// both a missing and an old driver; the hint tells them apart.
std::string CudaErrorHint(int code, int runtime_version, int driver_version);

}  // namespace operon_cuda
