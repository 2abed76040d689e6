// A stand-in for NVIDIA's libnvidia-ml.so.1, for tests on hosts without a GPU:
// the NVML entry points Operon's reader (native/src/nvml.cc) calls, with the
// real ABI and fixed readings, so the whole path (dlopen, the pool-thread
// sample, the gauges, /metrics) runs for real. Built by native/src/fake-nvml.ts.
//
// Two devices:
//   0: GPU-00000000-1111-2222-3333-444444444444  utilization 37 %, 80 GiB, 20 GiB used,
//      250.5 W of 700 W; energy 1,000,000 mJ + 2,500 mJ per reading
//   1: GPU-55555555-6666-7777-8888-999999999999  utilization 90 %, 80 GiB, 60 GiB used,
//      power NOT_SUPPORTED (left out), limit 700 W; energy NOT_SUPPORTED
// FAKE_NVML_INIT_ERROR=<code> makes nvmlInit_v2 fail with that code (9 = DRIVER_NOT_LOADED).
// FAKE_NVML_HANG_MS=<ms> makes every utilization reading take that long (a driver that hangs).
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

static const int kSuccess = 0;
static const int kUninitialized = 1;
static const int kInvalidArgument = 2;
static const int kNotSupported = 3;
static const int kInsufficientSize = 7;

static std::atomic<int> initialized{0};
static std::atomic<unsigned long long> energy_reads{0};
static int device_tags[2] = {0, 1};
static const char* kUuids[2] = {"GPU-00000000-1111-2222-3333-444444444444", "GPU-55555555-6666-7777-8888-999999999999"};
static const unsigned long long kGiB = 1024ull * 1024ull * 1024ull;

static int IndexOf(nvmlDevice_t device) {
  for (int i = 0; i < 2; ++i)
    if (reinterpret_cast<void*>(device) == static_cast<void*>(&device_tags[i])) return i;
  return -1;
}

nvmlReturn_t nvmlInit_v2() {
  const char* fail = std::getenv("FAKE_NVML_INIT_ERROR");
  if (fail != nullptr && *fail != '\0') return std::atoi(fail);
  initialized = 1;
  return kSuccess;
}

nvmlReturn_t nvmlShutdown() {
  if (initialized == 0) return kUninitialized;
  initialized = 0;
  return kSuccess;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (initialized == 0) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = 2;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (initialized == 0) return kUninitialized;
  if (index >= 2 || device == nullptr) return kInvalidArgument;
  *device = reinterpret_cast<nvmlDevice_t>(&device_tags[index]);
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  int index = IndexOf(device);
  if (index < 0 || uuid == nullptr) return kInvalidArgument;
  if (length < std::strlen(kUuids[index]) + 1) return kInsufficientSize;
  std::strcpy(uuid, kUuids[index]);
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  int index = IndexOf(device);
  if (index < 0 || utilization == nullptr) return kInvalidArgument;
  const char* hang = std::getenv("FAKE_NVML_HANG_MS");
  if (hang != nullptr && *hang != '\0') usleep(static_cast<useconds_t>(std::atoi(hang)) * 1000);
  utilization->gpu = index == 0 ? 37 : 90;
  utilization->memory = index == 0 ? 12 : 40;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  int index = IndexOf(device);
  if (index < 0 || memory == nullptr) return kInvalidArgument;
  memory->total = 80 * kGiB;
  memory->used = (index == 0 ? 20 : 60) * kGiB;
  memory->free = memory->total - memory->used;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  int index = IndexOf(device);
  if (index < 0 || milliwatts == nullptr) return kInvalidArgument;
  if (index == 1) return kNotSupported;
  *milliwatts = 250500;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* milliwatts) {
  int index = IndexOf(device);
  if (index < 0 || milliwatts == nullptr) return kInvalidArgument;
  *milliwatts = 700000;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* millijoules) {
  int index = IndexOf(device);
  if (index < 0 || millijoules == nullptr) return kInvalidArgument;
  if (index == 1) return kNotSupported;
  *millijoules = 1000000ull + 2500ull * energy_reads.fetch_add(1);
  return kSuccess;
}

}  // extern "C"
