// Operon's NVML reader without Node: the few NVML entry points Operon uses,
// declared with NVML's own ABI (the _v2 entry points, enum nvmlReturn_t as
// int, opaque device handles; no NVIDIA header needed), loaded with dlopen.
// Used by the gateway's addon (nvml.cc) and by the C++ test host's
// `nvml-check` (native/tritonserver/test/nvml-check.cc), which runs in the
// device check on a GPU host, where there is no Node.
//
// One library per process: Open/Close and Sample are serialized by a mutex
// (Sample runs on pool threads in the addon).
#pragma once

#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace operon_nvml {

using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
using nvmlDevice_t = struct nvmlDeviceOpaque*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned int kUuidBufferSize = 96;

struct NvmlApi {
  void* handle = nullptr;
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*DeviceGetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long*) = nullptr;
};

/** One device's readings in Triton's units; empty = the device does not report it. */
struct DeviceSample {
  unsigned int index = 0;
  std::string uuid;
  std::optional<double> utilization;  // 0..1
  std::optional<double> memory_total_bytes;
  std::optional<double> memory_used_bytes;
  std::optional<double> power_usage_watts;
  std::optional<double> power_limit_watts;
  std::optional<double> energy_joules;  // since the driver loaded
};

inline std::mutex& ApiMutex() {
  static std::mutex mutex;
  return mutex;
}

inline NvmlApi& Api() {
  static NvmlApi api;
  return api;
}

inline std::string ErrorText(nvmlReturn_t code) {
  const char* text = Api().ErrorString != nullptr ? Api().ErrorString(code) : nullptr;
  return std::string(text != nullptr ? text : "unknown NVML error") + " (" + std::to_string(code) + ")";
}

inline void CloseLocked() {
  NvmlApi& api = Api();
  if (api.handle == nullptr) return;
  if (api.Shutdown != nullptr) api.Shutdown();
  dlclose(api.handle);
  api = NvmlApi{};
}

template <typename Fn>
void Resolve(void* handle, const char* name, Fn* slot, std::string* missing) {
  *slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*slot == nullptr && missing->empty()) *missing = name;
}

/** Loads and starts NVML from `path` (closing any open one); false with *error saying which step failed. */
inline bool Open(const std::string& path, unsigned int* device_count, std::string* error) {
  std::lock_guard<std::mutex> lock(ApiMutex());
  CloseLocked();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    *error = "cannot load " + path + ": " + (reason != nullptr ? reason : "dlopen failed");
    return false;
  }
  NvmlApi loaded;
  loaded.handle = handle;
  std::string missing;
  Resolve(handle, "nvmlInit_v2", &loaded.Init, &missing);
  Resolve(handle, "nvmlShutdown", &loaded.Shutdown, &missing);
  Resolve(handle, "nvmlErrorString", &loaded.ErrorString, &missing);
  Resolve(handle, "nvmlDeviceGetCount_v2", &loaded.DeviceGetCount, &missing);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", &loaded.DeviceGetHandleByIndex, &missing);
  Resolve(handle, "nvmlDeviceGetUUID", &loaded.DeviceGetUUID, &missing);
  Resolve(handle, "nvmlDeviceGetUtilizationRates", &loaded.DeviceGetUtilizationRates, &missing);
  Resolve(handle, "nvmlDeviceGetMemoryInfo", &loaded.DeviceGetMemoryInfo, &missing);
  Resolve(handle, "nvmlDeviceGetPowerUsage", &loaded.DeviceGetPowerUsage, &missing);
  Resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", &loaded.DeviceGetEnforcedPowerLimit, &missing);
  Resolve(handle, "nvmlDeviceGetTotalEnergyConsumption", &loaded.DeviceGetTotalEnergyConsumption, &missing);
  if (!missing.empty()) {
    dlclose(handle);
    *error = path + " is not NVML: it has no " + missing + "()";
    return false;
  }
  NvmlApi& api = Api();
  api = loaded;
  nvmlReturn_t status = api.Init();
  if (status != NVML_SUCCESS) {
    *error = "nvmlInit_v2 failed: " + ErrorText(status);
    dlclose(handle);
    api = NvmlApi{};
    return false;
  }
  unsigned int count = 0;
  status = api.DeviceGetCount(&count);
  if (status != NVML_SUCCESS) {
    *error = "nvmlDeviceGetCount_v2 failed: " + ErrorText(status);
    CloseLocked();
    return false;
  }
  *device_count = count;
  return true;
}

/** Reads every device (a device whose handle cannot be had is skipped); false with *error when NVML is not open or fails. */
inline bool Sample(std::vector<DeviceSample>* samples, std::string* error) {
  std::lock_guard<std::mutex> lock(ApiMutex());
  NvmlApi& api = Api();
  if (api.handle == nullptr) {
    *error = "NVML is not open";
    return false;
  }
  unsigned int count = 0;
  nvmlReturn_t status = api.DeviceGetCount(&count);
  if (status != NVML_SUCCESS) {
    *error = "nvmlDeviceGetCount_v2 failed: " + ErrorText(status);
    return false;
  }
  for (unsigned int index = 0; index < count; ++index) {
    nvmlDevice_t device = nullptr;
    if (api.DeviceGetHandleByIndex(index, &device) != NVML_SUCCESS) continue;
    DeviceSample sample;
    sample.index = index;
    char uuid[kUuidBufferSize] = {0};
    if (api.DeviceGetUUID(device, uuid, kUuidBufferSize) == NVML_SUCCESS) {
      uuid[kUuidBufferSize - 1] = '\0';
      sample.uuid = uuid;
    }
    nvmlUtilization_t utilization{};
    if (api.DeviceGetUtilizationRates(device, &utilization) == NVML_SUCCESS) sample.utilization = utilization.gpu / 100.0;
    nvmlMemory_t memory{};
    if (api.DeviceGetMemoryInfo(device, &memory) == NVML_SUCCESS) {
      sample.memory_total_bytes = static_cast<double>(memory.total);
      sample.memory_used_bytes = static_cast<double>(memory.used);
    }
    unsigned int milliwatts = 0;
    if (api.DeviceGetPowerUsage(device, &milliwatts) == NVML_SUCCESS) sample.power_usage_watts = milliwatts / 1000.0;
    if (api.DeviceGetEnforcedPowerLimit(device, &milliwatts) == NVML_SUCCESS)
      sample.power_limit_watts = milliwatts / 1000.0;
    unsigned long long millijoules = 0;
    if (api.DeviceGetTotalEnergyConsumption(device, &millijoules) == NVML_SUCCESS)
      sample.energy_joules = static_cast<double>(millijoules) / 1000.0;
    samples->push_back(std::move(sample));
  }
  return true;
}

/**
 * nvmlShutdown and dlclose; idempotent. Never waits for a reading in progress (the addon calls
 * this on the event loop, and a hung driver must not block it): then NVML stays open, and false.
 */
inline bool Close() {
  std::unique_lock<std::mutex> lock(ApiMutex(), std::try_to_lock);
  if (!lock.owns_lock()) return false;
  CloseLocked();
  return true;
}

}  // namespace operon_nvml
