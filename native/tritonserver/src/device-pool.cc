// The worker's per-GPU pool of device memory: where a response output goes
// when the host keeps it on the GPU for the next step of an operator
// (OperonHostDeviceAllocate from the host's `allocate` callback), and what
// TRITONBACKEND_MemoryManagerAllocate serves for TRITONSERVER_MEMORY_GPU.
//
// Memory comes from the CUDA driver loaded at run time (cuda-driver.h), so the
// library keeps no CUDA link. Freed regions stay cached by size class (an
// operator's intermediate tensors have the same few sizes request after
// request, and cuMemAlloc/cuMemFree synchronize the device); an allocation
// the driver refuses for lack of memory gives the cache back and tries once
// more. Live regions are remembered, so a GPU input handed to
// OperonHostExecute can be checked to lie inside one of them.
//
// Between processes (an operator's steps run in different workers), a region
// is exported as a CUDA IPC handle (cuIpcGetMemHandle of the region, plus the
// offset of the tensor in it) and imported by the consumer's worker, which
// opens each region once (cuIpcOpenMemHandle) and keeps it open, since the
// producer's pool reuses its regions request after request; imported regions
// count as the pool's for the input checks.
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "cuda-driver.h"
#include "internal.h"

namespace {

namespace cu = operon_cuda_driver;

constexpr int kMaxDevices = 64;
constexpr int CUDA_ERROR_OUT_OF_MEMORY = 2;

struct Region {
  uint64_t size_class = 0;
  uint64_t byte_size = 0;  // what the caller asked for
};

struct DevicePool {
  std::mutex mutex;
  std::map<uintptr_t, Region> live;                 // by base address
  std::multimap<uint64_t, uintptr_t> cached;        // by size class
  std::map<std::string, uintptr_t> imports;         // opened IPC handles (64 bytes) -> their mapping
  std::map<uintptr_t, Region> imported;             // those mappings, by address
  uint64_t live_bytes = 0;
  uint64_t cached_bytes = 0;
};

DevicePool& PoolOf(int device) {
  static DevicePool pools[kMaxDevices];
  return pools[device];
}

// 256 bytes at least (the driver's alignment); above, eight classes per
// power of two, so a cached region is never more than 1/8 larger than asked.
uint64_t SizeClass(uint64_t n) {
  if (n <= 256) return 256;
  uint64_t power = 1;
  while (power * 2 <= n) power *= 2;
  const uint64_t step = power / 8;
  return (n + step - 1) / step * step;
}

OperonHostError* CheckDevice(const char* fn, int32_t device) {
  if (device < 0 || device >= kMaxDevices)
    return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": GPU " + std::to_string(device) +
                                                                " is not a device ordinal (0.." +
                                                                std::to_string(kMaxDevices - 1) + ")");
  return nullptr;
}

// Frees every cached region of `pool` (the caller holds its mutex and a driver scope).
void TrimLocked(const cu::Scope& scope, DevicePool& pool) {
  for (auto& [size, base] : pool.cached) scope.api().MemFree(base);
  pool.cached.clear();
  pool.cached_bytes = 0;
}

OperonHostError* Copy(const char* fn, int32_t device, uint64_t byte_size, bool to_host, void* dst, const void* src) {
  if (OperonHostError* e = CheckDevice(fn, device)) return e;
  if (byte_size == 0) return nullptr;
  if (dst == nullptr || src == nullptr)
    return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": NULL pointer");
  const void* device_side = to_host ? src : dst;
  if (!operon::DeviceRegionHolds(device, device_side, byte_size))
    return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG,
                             std::string(fn) + ": " + std::to_string(byte_size) +
                                 " bytes of device memory are not inside one region of GPU " + std::to_string(device) +
                                 "'s pool");
  cu::Scope scope(device);
  if (!scope.error.empty()) return operon::HostError(OPERON_HOST_ERROR_UNAVAILABLE, std::string(fn) + ": " + scope.error);
  cu::CUresult r = to_host ? scope.api().MemcpyDtoH(dst, reinterpret_cast<cu::CUdeviceptr>(src), byte_size)
                           : scope.api().MemcpyHtoD(reinterpret_cast<cu::CUdeviceptr>(dst), src, byte_size);
  if (r != cu::CUDA_SUCCESS)
    return operon::HostError(OPERON_HOST_ERROR_INTERNAL,
                             std::string(fn) + ": " + cu::Describe(to_host ? "cuMemcpyDtoH" : "cuMemcpyHtoD", r));
  return nullptr;
}

}  // namespace

namespace operon {

bool DeviceRegionHolds(int32_t device, const void* base, uint64_t byte_size) {
  if (device < 0 || device >= kMaxDevices) return false;
  DevicePool& pool = PoolOf(device);
  const auto p = reinterpret_cast<uintptr_t>(base);
  std::lock_guard<std::mutex> lock(pool.mutex);
  for (const auto* regions : {&pool.live, &pool.imported}) {
    auto it = regions->upper_bound(p);
    if (it == regions->begin()) continue;
    --it;
    if (p >= it->first && p + byte_size <= it->first + it->second.byte_size) return true;
  }
  return false;
}

}  // namespace operon

extern "C" {

OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceAllocate(int32_t device, uint64_t byte_size, void** base) {
  const char* fn = "OperonHostDeviceAllocate";
  if (OperonHostError* e = CheckDevice(fn, device)) return e;
  if (base == nullptr) return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": base is NULL");
  const uint64_t size_class = SizeClass(byte_size);
  DevicePool& pool = PoolOf(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  uintptr_t address = 0;
  auto cached = pool.cached.find(size_class);
  if (cached != pool.cached.end()) {
    address = cached->second;
    pool.cached.erase(cached);
    pool.cached_bytes -= size_class;
  } else {
    cu::Scope scope(device);
    if (!scope.error.empty())
      return operon::HostError(OPERON_HOST_ERROR_UNAVAILABLE, std::string(fn) + ": " + scope.error);
    cu::CUdeviceptr p = 0;
    cu::CUresult r = scope.api().MemAlloc(&p, size_class);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && !pool.cached.empty()) {
      TrimLocked(scope, pool);
      r = scope.api().MemAlloc(&p, size_class);
    }
    if (r != cu::CUDA_SUCCESS)
      return operon::HostError(r == CUDA_ERROR_OUT_OF_MEMORY ? OPERON_HOST_ERROR_UNAVAILABLE : OPERON_HOST_ERROR_INTERNAL,
                               std::string(fn) + ": " + std::to_string(byte_size) + " bytes on GPU " +
                                   std::to_string(device) + ": " + cu::Describe("cuMemAlloc", r));
    address = static_cast<uintptr_t>(p);
  }
  pool.live[address] = Region{size_class, byte_size};
  pool.live_bytes += size_class;
  *base = reinterpret_cast<void*>(address);
  return nullptr;
}

OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceFree(int32_t device, void* base) {
  const char* fn = "OperonHostDeviceFree";
  if (OperonHostError* e = CheckDevice(fn, device)) return e;
  DevicePool& pool = PoolOf(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  auto it = pool.live.find(reinterpret_cast<uintptr_t>(base));
  if (it == pool.live.end())
    return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": no region of GPU " +
                                                                std::to_string(device) + "'s pool starts there");
  pool.cached.emplace(it->second.size_class, it->first);
  pool.cached_bytes += it->second.size_class;
  pool.live_bytes -= it->second.size_class;
  pool.live.erase(it);
  return nullptr;
}

OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceCopyToHost(int32_t device, void* dst, const void* src,
                                                               uint64_t byte_size) {
  return Copy("OperonHostDeviceCopyToHost", device, byte_size, true, dst, src);
}

OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceCopyFromHost(int32_t device, void* dst, const void* src,
                                                                 uint64_t byte_size) {
  return Copy("OperonHostDeviceCopyFromHost", device, byte_size, false, dst, src);
}

OPERON_HOST_EXPORT void OperonHostDevicePoolGetStatistics(int32_t device, OperonHostDevicePoolStatistics* statistics) {
  if (statistics == nullptr) return;
  *statistics = OperonHostDevicePoolStatistics{};
  if (device < 0 || device >= kMaxDevices) return;
  DevicePool& pool = PoolOf(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  statistics->live_regions = pool.live.size();
  statistics->live_bytes = pool.live_bytes;
  statistics->cached_regions = pool.cached.size();
  statistics->cached_bytes = pool.cached_bytes;
  statistics->imported_regions = pool.imported.size();
}

OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceExport(int32_t device, const void* base,
                                                           OperonHostDeviceIpcHandle* handle) {
  const char* fn = "OperonHostDeviceExport";
  if (OperonHostError* e = CheckDevice(fn, device)) return e;
  if (handle == nullptr) return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": handle is NULL");
  DevicePool& pool = PoolOf(device);
  const auto p = reinterpret_cast<uintptr_t>(base);
  uintptr_t region = 0;
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    auto it = pool.live.upper_bound(p);
    if (it == pool.live.begin() || p >= std::prev(it)->first + std::prev(it)->second.byte_size)
      return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": the address is not inside a region of GPU " +
                                                                  std::to_string(device) + "'s own pool");
    region = std::prev(it)->first;
  }
  cu::Scope scope(device);
  if (!scope.error.empty()) return operon::HostError(OPERON_HOST_ERROR_UNAVAILABLE, std::string(fn) + ": " + scope.error);
  cu::CUipcMemHandle h{};
  cu::CUresult r = scope.api().IpcGetMemHandle(&h, static_cast<cu::CUdeviceptr>(region));
  if (r != cu::CUDA_SUCCESS)
    return operon::HostError(OPERON_HOST_ERROR_INTERNAL, std::string(fn) + ": " + cu::Describe("cuIpcGetMemHandle", r));
  static_assert(sizeof(handle->handle) == sizeof(h.reserved), "CUipcMemHandle is 64 bytes");
  std::memcpy(handle->handle, h.reserved, sizeof h.reserved);
  handle->offset = p - region;
  return nullptr;
}

OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceImport(int32_t device, const OperonHostDeviceIpcHandle* handle,
                                                           void** base) {
  const char* fn = "OperonHostDeviceImport";
  if (OperonHostError* e = CheckDevice(fn, device)) return e;
  if (handle == nullptr || base == nullptr)
    return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": handle or base is NULL");
  DevicePool& pool = PoolOf(device);
  const std::string key(reinterpret_cast<const char*>(handle->handle), sizeof handle->handle);
  std::lock_guard<std::mutex> lock(pool.mutex);
  auto known = pool.imports.find(key);
  uintptr_t mapping = 0;
  if (known != pool.imports.end()) {
    mapping = known->second;
  } else {
    cu::Scope scope(device);
    if (!scope.error.empty()) return operon::HostError(OPERON_HOST_ERROR_UNAVAILABLE, std::string(fn) + ": " + scope.error);
    cu::CUipcMemHandle h{};
    std::memcpy(h.reserved, handle->handle, sizeof h.reserved);
    cu::CUdeviceptr p = 0;
    cu::CUresult r = scope.api().IpcOpenMemHandle(&p, h, cu::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != cu::CUDA_SUCCESS)
      return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": GPU " + std::to_string(device) + ": " +
                                                                  cu::Describe("cuIpcOpenMemHandle", r) +
                                                                  " (a handle from another process, still alive, is needed)");
    cu::CUdeviceptr start = 0;
    size_t size = 0;
    r = scope.api().MemGetAddressRange(&start, &size, p);
    if (r != cu::CUDA_SUCCESS) {
      scope.api().IpcCloseMemHandle(p);
      return operon::HostError(OPERON_HOST_ERROR_INTERNAL, std::string(fn) + ": " + cu::Describe("cuMemGetAddressRange", r));
    }
    mapping = static_cast<uintptr_t>(p);
    pool.imports[key] = mapping;
    pool.imported[mapping] = Region{size, size};
  }
  if (handle->offset >= pool.imported[mapping].byte_size)
    return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, std::string(fn) + ": offset " + std::to_string(handle->offset) +
                                                                " is past the end of the exported region (" +
                                                                std::to_string(pool.imported[mapping].byte_size) + " bytes)");
  *base = reinterpret_cast<void*>(mapping + handle->offset);
  return nullptr;
}

OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceImportsClose(int32_t device) {
  const char* fn = "OperonHostDeviceImportsClose";
  if (OperonHostError* e = CheckDevice(fn, device)) return e;
  DevicePool& pool = PoolOf(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  if (pool.imports.empty()) return nullptr;
  cu::Scope scope(device);
  if (!scope.error.empty()) return operon::HostError(OPERON_HOST_ERROR_UNAVAILABLE, std::string(fn) + ": " + scope.error);
  for (auto& [key, mapping] : pool.imports) scope.api().IpcCloseMemHandle(static_cast<cu::CUdeviceptr>(mapping));
  pool.imports.clear();
  pool.imported.clear();
  return nullptr;
}

OPERON_HOST_EXPORT OperonHostError* OperonHostDevicePoolTrim(int32_t device) {
  const char* fn = "OperonHostDevicePoolTrim";
  if (OperonHostError* e = CheckDevice(fn, device)) return e;
  DevicePool& pool = PoolOf(device);
  std::lock_guard<std::mutex> lock(pool.mutex);
  if (pool.cached.empty()) return nullptr;
  cu::Scope scope(device);
  if (!scope.error.empty()) return operon::HostError(OPERON_HOST_ERROR_UNAVAILABLE, std::string(fn) + ": " + scope.error);
  TrimLocked(scope, pool);
  return nullptr;
}

}  // extern "C"
