// A stand-in for NVIDIA's libcuda.so.1 on hosts without a GPU, for the tests
// of device-resident tensors (libtritonserver.so's device pool, the GPU-aware
// test backend operon_gpu_identity, and the two-step operator in the C++
// suite): the driver entry points Operon's cuda-driver.h resolves, with two
// GPUs whose "device memory" is host memory.
//
// A device address is the host address with bit 62 set: not a canonical
// x86-64 address, so code that dereferences device memory as if it were host
// memory crashes here as it would on a GPU, instead of passing by accident.
// Only the copies below translate it back.
//
// Each allocation is a memfd mapping, so CUDA IPC works across processes as
// on a GPU: cuIpcGetMemHandle writes the exporter's pid and the memfd's
// number, cuIpcOpenMemHandle in another process of the same user maps
// /proc/<pid>/fd/<fd> (at another address, as CUDA may), and opening a
// handle in the process that exported it is refused, as CUDA refuses it.
//
// Besides the driver API, the tests read what happened through
// fake_cuda_counters / fake_cuda_dtoh_overlapping (resolved with dlsym), or,
// from another process (a test driving the real server, whose workers load
// this library through OPERON_CUDA_DRIVER_LIB), in
// <that library's folder>/fake-cuda-counters/<pid>.json: rewritten after
// every counted call while that folder exists (the test copies the library
// to a folder of its own and makes it; no variable of the server's
// environment is needed, so the worker's allow-list stays as it is).
#include <fcntl.h>
#include <cstdio>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace {

constexpr int kDevices = 2;
constexpr uint64_t kDeviceBit = 1ull << 62;
constexpr int CUDA_SUCCESS = 0;
constexpr int CUDA_ERROR_INVALID_VALUE = 1;
constexpr int CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr int CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr int CUDA_ERROR_INVALID_DEVICE = 101;
constexpr int CUDA_ERROR_INVALID_CONTEXT = 201;

struct Context {
  int device;
};
Context contexts[kDevices] = {{0}, {1}};

struct Allocation {
  uint64_t size;
  int device;
  int fd;         // the memfd (exported allocations) or -1 (opened through IPC)
  bool imported;  // opened with cuIpcOpenMemHandle: closed with cuIpcCloseMemHandle, not freed
};

// What cuIpcGetMemHandle writes into the 64 opaque bytes.
struct IpcHandle {
  char magic[8];
  int64_t pid;
  int64_t fd;
  uint64_t size;
  int64_t device;
};
static_assert(sizeof(IpcHandle) <= 64, "fits CUipcMemHandle");
constexpr char kMagic[8] = {'f', 'a', 'k', 'e', 'c', 'u', 'd', 'a'};

struct State {
  std::mutex mutex;
  bool initialized = false;
  std::map<uint64_t, Allocation> allocations;  // by device address
  uint64_t htod = 0, dtoh = 0, dtod = 0, allocs = 0, frees = 0, ipc_opens = 0, ipc_closes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t memory_limit = UINT64_MAX;  // bytes per process, to test out-of-memory
  std::vector<std::pair<uint64_t, uint64_t>> dtoh_sources;  // device address, size
};
State state;
thread_local std::vector<Context*> current;

// The allocation holding [address, address + size), or nullptr (caller holds the mutex).
const Allocation* Find(uint64_t address, uint64_t size, uint64_t* base) {
  auto it = state.allocations.upper_bound(address);
  if (it == state.allocations.begin()) return nullptr;
  --it;
  if (address < it->first || address + size > it->first + it->second.size) return nullptr;
  *base = it->first;
  return &it->second;
}

void* Host(uint64_t device_address) { return reinterpret_cast<void*>(device_address & ~kDeviceBit); }

// Writes this process's counters to <library folder>/fake-cuda-counters/<pid>.json when that folder exists
// (caller holds the mutex). Through a temporary file and rename, so a reader never sees half a file.
void Publish() {
  const char* library = std::getenv("OPERON_CUDA_DRIVER_LIB");
  if (library == nullptr) return;
  const std::string where(library);
  const size_t slash = where.rfind('/');
  if (slash == std::string::npos) return;
  const std::string dir = where.substr(0, slash) + "/fake-cuda-counters";
  if (access(dir.c_str(), W_OK) != 0) return;
  const std::string path = dir + "/" + std::to_string(getpid()) + ".json";
  const std::string temporary = path + ".tmp";
  FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) return;
  std::fprintf(file,
               "{\"htod\":%llu,\"dtoh\":%llu,\"dtod\":%llu,\"allocs\":%llu,\"frees\":%llu,\"liveAllocations\":%llu,"
               "\"ipcOpens\":%llu,\"ipcCloses\":%llu}\n",
               static_cast<unsigned long long>(state.htod), static_cast<unsigned long long>(state.dtoh),
               static_cast<unsigned long long>(state.dtod), static_cast<unsigned long long>(state.allocs),
               static_cast<unsigned long long>(state.frees), static_cast<unsigned long long>(state.allocations.size()),
               static_cast<unsigned long long>(state.ipc_opens), static_cast<unsigned long long>(state.ipc_closes));
  std::fclose(file);
  std::rename(temporary.c_str(), path.c_str());
}

}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))

EXPORT int cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state.mutex);
  state.initialized = true;
  return CUDA_SUCCESS;
}

EXPORT int cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

EXPORT int cuDeviceGetCount(int* count) {
  *count = kDevices;
  return CUDA_SUCCESS;
}

EXPORT int cuDeviceGet(int* device, int ordinal) {
  if (!state.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT int cuDevicePrimaryCtxRetain(void** context, int device) {
  if (device < 0 || device >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *context = &contexts[device];
  return CUDA_SUCCESS;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int device) {
  return device < 0 || device >= kDevices ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

EXPORT int cuCtxPushCurrent_v2(void* context) {
  if (context != &contexts[0] && context != &contexts[1]) return CUDA_ERROR_INVALID_CONTEXT;
  current.push_back(static_cast<Context*>(context));
  return CUDA_SUCCESS;
}

EXPORT int cuCtxPopCurrent_v2(void** context) {
  if (current.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (context != nullptr) *context = current.back();
  current.pop_back();
  return CUDA_SUCCESS;
}

EXPORT int cuMemAlloc_v2(uint64_t* pointer, size_t size) {
  if (current.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.allocated_bytes + size > state.memory_limit) return CUDA_ERROR_OUT_OF_MEMORY;
  const int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  void* host = ftruncate(fd, static_cast<off_t>(size)) == 0
                   ? mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  if (host == MAP_FAILED) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const uint64_t address = reinterpret_cast<uint64_t>(host) | kDeviceBit;
  state.allocations[address] = Allocation{size, current.back()->device, fd, false};
  state.allocated_bytes += size;
  state.allocs += 1;
  Publish();
  *pointer = address;
  return CUDA_SUCCESS;
}

EXPORT int cuMemFree_v2(uint64_t pointer) {
  std::lock_guard<std::mutex> lock(state.mutex);
  auto it = state.allocations.find(pointer);
  if (it == state.allocations.end() || it->second.imported) return CUDA_ERROR_INVALID_VALUE;
  munmap(Host(pointer), it->second.size);
  close(it->second.fd);
  state.allocated_bytes -= it->second.size;
  state.allocations.erase(it);
  state.frees += 1;
  Publish();
  return CUDA_SUCCESS;
}

EXPORT int cuMemGetAddressRange_v2(uint64_t* base, size_t* size, uint64_t pointer) {
  std::lock_guard<std::mutex> lock(state.mutex);
  uint64_t start;
  const Allocation* a = Find(pointer, 1, &start);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (base != nullptr) *base = start;
  if (size != nullptr) *size = a->size;
  return CUDA_SUCCESS;
}

EXPORT int cuIpcGetMemHandle(void* handle, uint64_t pointer) {
  std::lock_guard<std::mutex> lock(state.mutex);
  auto it = state.allocations.find(pointer);  // CUDA wants the allocation's base
  if (it == state.allocations.end() || it->second.imported) return CUDA_ERROR_INVALID_VALUE;
  IpcHandle h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.pid = getpid();
  h.fd = it->second.fd;
  h.size = it->second.size;
  h.device = it->second.device;
  std::memset(handle, 0, 64);
  std::memcpy(handle, &h, sizeof h);
  return CUDA_SUCCESS;
}

struct OpaqueHandle {
  char reserved[64];
};

EXPORT int cuIpcOpenMemHandle_v2(uint64_t* pointer, OpaqueHandle handle, unsigned int flags) {
  (void)flags;
  IpcHandle h;
  std::memcpy(&h, handle.reserved, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (current.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (h.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // CUDA refuses a handle in its own process
  const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
  void* host = mmap(nullptr, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (host == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(state.mutex);
  const uint64_t address = reinterpret_cast<uint64_t>(host) | kDeviceBit;
  state.allocations[address] = Allocation{h.size, static_cast<int>(h.device), -1, true};
  state.ipc_opens += 1;
  Publish();
  *pointer = address;
  return CUDA_SUCCESS;
}

EXPORT int cuIpcCloseMemHandle(uint64_t pointer) {
  std::lock_guard<std::mutex> lock(state.mutex);
  auto it = state.allocations.find(pointer);
  if (it == state.allocations.end() || !it->second.imported) return CUDA_ERROR_INVALID_VALUE;
  munmap(Host(pointer), it->second.size);
  state.allocations.erase(it);
  state.ipc_closes += 1;
  Publish();
  return CUDA_SUCCESS;
}

EXPORT int cuMemcpyHtoD_v2(uint64_t dst, const void* src, size_t size) {
  std::lock_guard<std::mutex> lock(state.mutex);
  uint64_t base;
  if (current.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (Find(dst, size, &base) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(Host(dst), src, size);
  state.htod += 1;
  Publish();
  return CUDA_SUCCESS;
}

EXPORT int cuMemcpyDtoH_v2(void* dst, uint64_t src, size_t size) {
  std::lock_guard<std::mutex> lock(state.mutex);
  uint64_t base;
  if (current.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (Find(src, size, &base) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, Host(src), size);
  state.dtoh += 1;
  state.dtoh_sources.emplace_back(src, size);
  Publish();
  return CUDA_SUCCESS;
}

EXPORT int cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t size) {
  std::lock_guard<std::mutex> lock(state.mutex);
  uint64_t base;
  if (current.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (Find(dst, size, &base) == nullptr || Find(src, size, &base) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(Host(dst), Host(src), size);
  state.dtod += 1;
  Publish();
  return CUDA_SUCCESS;
}

EXPORT int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// ---- For the tests (not part of CUDA's API) ----

struct FakeCudaCounters {
  uint64_t htod, dtoh, dtod, allocs, frees, live_allocations, live_bytes, ipc_opens, ipc_closes;
};

// live_allocations counts this process's own allocations and the ones it opened through IPC.
EXPORT void fake_cuda_counters(FakeCudaCounters* c) {
  std::lock_guard<std::mutex> lock(state.mutex);
  *c = FakeCudaCounters{state.htod,       state.dtoh,          state.dtod,
                        state.allocs,     state.frees,         static_cast<uint64_t>(state.allocations.size()),
                        state.allocated_bytes, state.ipc_opens, state.ipc_closes};
}

// How many device-to-host copies read any byte of [address, address + size).
EXPORT uint64_t fake_cuda_dtoh_overlapping(uint64_t address, uint64_t size) {
  std::lock_guard<std::mutex> lock(state.mutex);
  uint64_t n = 0;
  for (auto& [src, bytes] : state.dtoh_sources)
    if (src < address + size && address < src + bytes) n += 1;
  return n;
}

// The most bytes all live allocations may hold (UINT64_MAX: no limit).
EXPORT void fake_cuda_set_memory_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(state.mutex);
  state.memory_limit = bytes;
}
