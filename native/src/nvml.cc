// The gateway's reader of NVIDIA's management library (NVML), for the GPU
// metrics Triton exports (nv_gpu_utilization, nv_gpu_memory_*_bytes,
// nv_gpu_power_*, nv_energy_consumption). The NVML side is nvml-reader.h
// (shared with the C++ test host's nvml-check, which needs no Node).
//
// JS API (see nvml.ts for the loader and the types):
//   open(libraryPath): { deviceCount }   dlopen the library, nvmlInit_v2, count the devices;
//                                        throws an Error saying which step failed
//   sample(): Promise<Device[]>          reads every device on a thread of its own (NVML calls
//                                        can take milliseconds each: never on the event loop)
//   close()                              nvmlShutdown and dlclose; idempotent
//
// The library is never linked: it is looked up at run time, so the addon
// builds and loads on hosts without a driver (where open() fails and says so).
// A reading a device does not support (NVML_ERROR_NOT_SUPPORTED, e.g. power
// on some boards) is left out of that device's sample (null), not reported as 0.

#include <napi.h>

#include <string>
#include <thread>
#include <vector>

#include "nvml-reader.h"

namespace {

Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "open(libraryPath): libraryPath must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  unsigned int count = 0;
  std::string error;
  if (!operon_nvml::Open(info[0].As<Napi::String>(), &count, &error)) {
    Napi::Error::New(env, error).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("deviceCount", Napi::Number::New(env, count));
  return result;
}

// A reading runs on a detached thread of its own, not on libuv's pool: a driver that hangs would
// otherwise hold one of the pool's four threads (the gateway's file and crypto work) and, since
// libuv joins its pool at exit, the process's exit too. The result comes back through a
// thread-safe function that does not keep the event loop alive.
struct SampleResult {
  Napi::Promise::Deferred deferred;
  std::vector<operon_nvml::DeviceSample> samples;
  std::string error;
  bool ok = false;
};

void Deliver(Napi::Env env, Napi::Function, std::nullptr_t*, SampleResult* result) {
  if (env != nullptr) {
    if (!result->ok) {
      result->deferred.Reject(Napi::Error::New(env, result->error).Value());
    } else {
      Napi::Array devices = Napi::Array::New(env, result->samples.size());
      for (size_t i = 0; i < result->samples.size(); ++i) {
        const operon_nvml::DeviceSample& sample = result->samples[i];
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
      result->deferred.Resolve(devices);
    }
  }
  delete result;
}

using SampleTsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, SampleResult, Deliver>;

Napi::Value Sample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* result = new SampleResult{Napi::Promise::Deferred::New(env), {}, {}, false};
  Napi::Promise promise = result->deferred.Promise();
  SampleTsfn tsfn = SampleTsfn::New(env, "operon-nvml-sample", 0, 1);
  // A reading that never returns must not keep the process alive.
  tsfn.Unref(env);
  std::thread([tsfn, result]() mutable {
    result->ok = operon_nvml::Sample(&result->samples, &result->error);
    if (tsfn.BlockingCall(result) != napi_ok) delete result;
    tsfn.Release();
  }).detach();
  return promise;
}

Napi::Value Close(const Napi::CallbackInfo& info) {
  operon_nvml::Close();
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
