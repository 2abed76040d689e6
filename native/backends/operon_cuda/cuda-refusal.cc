#include "cuda-refusal.h"

namespace operon_cuda {

std::string CudaVersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string CudaErrorHint(int code, int runtime_version, int driver_version) {
  if (code == kCudaErrorInsufficientDriver && driver_version <= 0)
    return "; no NVIDIA driver is installed on this host (libcuda.so.1 cannot be loaded): install the driver, or use "
           "kind KIND_CPU with a CPU backend";
  if (code == kCudaErrorInsufficientDriver)
    return "; the NVIDIA driver supports CUDA " + CudaVersionString(driver_version) +
           ", older than the CUDA runtime this backend was built with (" + CudaVersionString(runtime_version) +
           "): update the driver";
  if (code == kCudaErrorNoDevice) return "; this host has no CUDA device";
  return "";
}

}  // namespace operon_cuda
