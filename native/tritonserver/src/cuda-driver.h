// The few entry points of NVIDIA's CUDA driver API (libcuda.so.1) that
// device-resident tensors need, loaded at run time with dlopen, so that
// nothing linking this header gets a link-time CUDA dependency: a host without
// the driver loads fine and is told why when it first asks for device memory.
//
// Header-only, like json-value.h: libtritonserver.so (its device pool) and a
// backend that works on device memory through the driver (operon_gpu_identity)
// each get a private copy. Both load the same library (dlopen returns one
// handle per process), so they share the driver and its primary contexts.
//
// OPERON_CUDA_DRIVER_LIB names another library than libcuda.so.1: the tests
// point it at native/test-fixtures/fake-cuda-driver.cc, a driver on host
// memory (no GPU needed).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>

namespace operon_cuda_driver {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;  // the driver's device address type (64 bits)

constexpr CUresult CUDA_SUCCESS = 0;

// CUipcMemHandle: an opaque 64-byte handle of a device allocation another process can open.
struct CUipcMemHandle {
  char reserved[64];
};
constexpr unsigned int CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;

struct Api {
  CUresult (*Init)(unsigned int) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*CtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*CtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  CUresult (*GetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*MemGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr) = nullptr;
  CUresult (*IpcGetMemHandle)(CUipcMemHandle*, CUdeviceptr) = nullptr;
  CUresult (*IpcOpenMemHandle)(CUdeviceptr*, CUipcMemHandle, unsigned int) = nullptr;
  CUresult (*IpcCloseMemHandle)(CUdeviceptr) = nullptr;
};

// The process's driver, loaded and cuInit'ed on first use. `error` is empty
// when every entry point resolved and cuInit succeeded, else says why not.
struct Driver {
  Api api;
  std::string library;
  std::string error;
};

inline const char* LibraryName() {
  const char* env = std::getenv("OPERON_CUDA_DRIVER_LIB");
  return env != nullptr && env[0] != '\0' ? env : "libcuda.so.1";
}

template <typename F>
bool Resolve(void* handle, const char* symbol, F* slot, std::string* error) {
  *slot = reinterpret_cast<F>(dlsym(handle, symbol));
  if (*slot == nullptr && error->empty()) *error = std::string("the driver has no ") + symbol;
  return *slot != nullptr;
}

inline const Driver& Get() {
  static Driver driver;
  static std::once_flag once;
  std::call_once(once, [] {
    driver.library = LibraryName();
    void* handle = dlopen(driver.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      driver.error = "cannot load the CUDA driver " + driver.library + ": " + (why ? why : "unknown error") +
                     " (no NVIDIA driver on this host?)";
      return;
    }
    Api& a = driver.api;
    std::string& e = driver.error;
    // The _v2 names are the 64-bit ones every driver since CUDA 4 exports (cuda.h maps the plain names to them).
    Resolve(handle, "cuInit", &a.Init, &e);
    Resolve(handle, "cuDeviceGetCount", &a.DeviceGetCount, &e);
    Resolve(handle, "cuDeviceGet", &a.DeviceGet, &e);
    Resolve(handle, "cuDevicePrimaryCtxRetain", &a.PrimaryCtxRetain, &e);
    Resolve(handle, "cuCtxPushCurrent_v2", &a.CtxPushCurrent, &e);
    Resolve(handle, "cuCtxPopCurrent_v2", &a.CtxPopCurrent, &e);
    Resolve(handle, "cuMemAlloc_v2", &a.MemAlloc, &e);
    Resolve(handle, "cuMemFree_v2", &a.MemFree, &e);
    Resolve(handle, "cuMemcpyHtoD_v2", &a.MemcpyHtoD, &e);
    Resolve(handle, "cuMemcpyDtoH_v2", &a.MemcpyDtoH, &e);
    Resolve(handle, "cuMemcpyDtoD_v2", &a.MemcpyDtoD, &e);
    Resolve(handle, "cuGetErrorName", &a.GetErrorName, &e);
    Resolve(handle, "cuMemGetAddressRange_v2", &a.MemGetAddressRange, &e);
    Resolve(handle, "cuIpcGetMemHandle", &a.IpcGetMemHandle, &e);
    Resolve(handle, "cuIpcOpenMemHandle_v2", &a.IpcOpenMemHandle, &e);
    Resolve(handle, "cuIpcCloseMemHandle", &a.IpcCloseMemHandle, &e);
    if (!e.empty()) {
      e = driver.library + ": " + e;
      return;
    }
    CUresult r = a.Init(0);
    if (r != CUDA_SUCCESS) {
      const char* name = nullptr;
      a.GetErrorName(r, &name);
      e = "cuInit failed: " + std::string(name ? name : "error " + std::to_string(r));
    }
  });
  return driver;
}

// "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY".
inline std::string Describe(const char* call, CUresult r) {
  const char* name = nullptr;
  const Driver& d = Get();
  if (d.api.GetErrorName != nullptr) d.api.GetErrorName(r, &name);
  return std::string(call) + " failed: " + (name != nullptr ? name : "CUDA error " + std::to_string(r));
}

// Makes GPU `device`'s primary context current on this thread for the scope
// (the context CUDA's runtime uses too, so pointers are shared with it).
// `error` is empty on success. The primary context is retained once per
// device and process and kept: releasing it would destroy every allocation.
class Scope {
 public:
  explicit Scope(int device) {
    const Driver& d = Get();
    if (!d.error.empty()) {
      error = d.error;
      return;
    }
    CUcontext context = nullptr;
    {
      static std::mutex mutex;
      static CUcontext contexts[64] = {};
      if (device < 0 || device >= 64) {
        error = "GPU " + std::to_string(device) + " is out of range";
        return;
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (contexts[device] == nullptr) {
        CUdevice handle = 0;
        CUresult r = d.api.DeviceGet(&handle, device);
        if (r != CUDA_SUCCESS) {
          error = "GPU " + std::to_string(device) + ": " + Describe("cuDeviceGet", r);
          return;
        }
        r = d.api.PrimaryCtxRetain(&contexts[device], handle);
        if (r != CUDA_SUCCESS) {
          error = "GPU " + std::to_string(device) + ": " + Describe("cuDevicePrimaryCtxRetain", r);
          return;
        }
      }
      context = contexts[device];
    }
    CUresult r = d.api.CtxPushCurrent(context);
    if (r != CUDA_SUCCESS) {
      error = "GPU " + std::to_string(device) + ": " + Describe("cuCtxPushCurrent", r);
      return;
    }
    pushed_ = true;
  }
  ~Scope() {
    if (pushed_) {
      CUcontext popped = nullptr;
      Get().api.CtxPopCurrent(&popped);
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  const Api& api() const { return Get().api; }

  std::string error;

 private:
  bool pushed_ = false;
};

}  // namespace operon_cuda_driver
