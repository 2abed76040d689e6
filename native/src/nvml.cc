// The gateway's reader of NVIDIA's management library (NVML), for the GPU
// metrics Triton exports (nv_gpu_utilization, nv_gpu_memory_*_bytes,
// nv_gpu_power_*, nv_energy_consumption).
//
// JS API (see nvml.ts for the loader and the types):
//   open(libraryPath): { deviceCount }   dlopen the library, nvmlInit_v2, count the devices;
//                                        throws an Error saying which step failed
//   sample(): Promise<Device[]>          reads every device on a libuv pool thread (NVML calls
//                                        can take milliseconds each: never on the event loop)
//   close()                              nvmlShutdown and dlclose; idempotent
//
// The library is never linked: it is looked up at run time, so the addon
// builds and loads on hosts without a driver (where open() fails and says so).
// Only the few NVML functions below are declared (with NVML's own ABI: the
// _v2 entry points, enum nvmlReturn_t as int, opaque device handles), so no
// NVIDIA header is needed to build.
//
// A reading a device does not support (NVML_ERROR_NOT_SUPPORTED, e.g. power
// on some boards) is left out of that device's sample, not reported as 0.

#include <napi.h>

#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace {

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

// One library per process; sample() runs on pool threads, open/close on the JS thread.
std::mutex api_mutex;
NvmlApi api;

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

std::string ErrorText(nvmlReturn_t code) {
  const char* text = api.ErrorString != nullptr ? api.ErrorString(code) : nullptr;
  return std::string(text != nullptr ? text : "unknown NVML error") + " (" + std::to_string(code) + ")";
}

void CloseLocked() {
  if (api.handle == nullptr) return;
  if (api.Shutdown != nullptr) api.Shutdown();
  dlclose(api.handle);
  api = NvmlApi{};
}

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* slot, std::string* missing) {
  *slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*slot == nullptr && missing->empty()) *missing = name;
  return *slot != nullptr;
}

Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "open(libraryPath): libraryPath must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string path = info[0].As<Napi::String>();
  std::lock_guard<std::mutex> lock(api_mutex);
  CloseLocked();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    Napi::Error::New(env, std::string("cannot load ") + path + ": " + (error != nullptr ? error : "dlopen failed"))
        .ThrowAsJavaScriptException();
    return env.Undefined();
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
    Napi::Error::New(env, path + " is not NVML: it has no " + missing + "()").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  api = loaded;
  nvmlReturn_t status = api.Init();
  if (status != NVML_SUCCESS) {
    std::string message = "nvmlInit_v2 failed: " + ErrorText(status);
    dlclose(handle);
    api = NvmlApi{};
    Napi::Error::New(env, message).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  unsigned int count = 0;
  status = api.DeviceGetCount(&count);
  if (status != NVML_SUCCESS) {
    std::string message = "nvmlDeviceGetCount_v2 failed: " + ErrorText(status);
    CloseLocked();
    Napi::Error::New(env, message).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("deviceCount", Napi::Number::New(env, count));
  return result;
}

class SampleWorker : public Napi::AsyncWorker {
 public:
  explicit SampleWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    std::lock_guard<std::mutex> lock(api_mutex);
    if (api.handle == nullptr) {
      SetError("NVML is not open");
      return;
    }
    unsigned int count = 0;
    nvmlReturn_t status = api.DeviceGetCount(&count);
    if (status != NVML_SUCCESS) {
      SetError("nvmlDeviceGetCount_v2 failed: " + ErrorText(status));
      return;
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
      if (api.DeviceGetUtilizationRates(device, &utilization) == NVML_SUCCESS)
        sample.utilization = utilization.gpu / 100.0;
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
      samples_.push_back(std::move(sample));
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Array devices = Napi::Array::New(env, samples_.size());
    for (size_t i = 0; i < samples_.size(); ++i) {
      const DeviceSample& sample = samples_[i];
      Napi::Object device = Napi::Object::New(env);
      device.Set("index", Napi::Number::New(env, sample.index));
      device.Set("uuid", Napi::String::New(env, sample.uuid));
      auto set = [&](const char* name, const std::optional<double>& value) {
        device.Set(name, value.has_value() ? Napi::Number::New(env, *value) : env.Null());
      };
      set("utilization", sample.utilization);
      set("memoryTotalBytes", sample.memory_total_bytes);
      set("memoryUsedBytes", sample.memory_used_bytes);
      set("powerUsageWatts", sample.power_usage_watts);
      set("powerLimitWatts", sample.power_limit_watts);
      set("energyJoules", sample.energy_joules);
      devices.Set(static_cast<uint32_t>(i), device);
    }
    deferred_.Resolve(devices);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<DeviceSample> samples_;
};

Napi::Value Sample(const Napi::CallbackInfo& info) {
  auto* worker = new SampleWorker(info.Env());
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value Close(const Napi::CallbackInfo& info) {
  std::lock_guard<std::mutex> lock(api_mutex);
  CloseLocked();
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("open", Napi::Function::New(env, Open));
  exports.Set("sample", Napi::Function::New(env, Sample));
  exports.Set("close", Napi::Function::New(env, Close));
  return exports;
}

}  // namespace

NODE_API_MODULE(operon_nvml, Init)
