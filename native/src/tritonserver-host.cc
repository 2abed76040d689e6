// The worker's binding to Operon's libtritonserver.so (Triton's C++ backend
// API), through its embedding API native/tritonserver/include/operon/host.h.
//
// JS API (see tritonserver-host.ts for the loader and the types):
//   open(libraryPath, onLog, verboseLevel)    dlopen libtritonserver.so RTLD_GLOBAL
//                                             (backends resolve their TRITON* symbols
//                                             from it) and route its log records to onLog
//   loadBackend(name, path, configJson): External
//   unloadBackend(backend)
//   createModel(backend, name, version, repositoryPath, configJson, autoComplete): External
//   modelConfig(model): string
//   modelStatistics(model): {...}
//   destroyModel(model)
//   createInstance(model, name, kind, deviceId, allocate, onEvent): External
//   destroyInstance(instance)
//   execute(instance, requests)               runs TRITONBACKEND_ModelInstanceExecute on
//                                             this (the JS) thread
//   cancel(instance, token)                   the client gave up: RequestIsCancelled says so
//   metricsText(): string
//   releaseDeviceOutput(region)              gives a GPU output's region back to the pool
//   devicePoolStatistics(gpu): {...}         this process's pool of GPU `gpu`
//   deviceImportsClose(gpu)                  closes the regions other processes exported
//
// Tensors on the GPU (an operator's intermediate between two KIND_GPU steps
// on one GPU, planned by the gateway). A request's `deviceOutputs` names the
// outputs the gateway wants kept on the device: when the backend asks for
// one in GPU memory, `allocate` answers with a region of this process's pool
// (OperonHostDeviceAllocate) instead of host memory, and the response
// carries it as `device: {gpu, handle, region}`: `handle` the CUDA IPC
// handle and offset (OperonHostDeviceIpcHandle, 72 bytes) another process
// imports, `region` this addon's number for it, held until JS calls
// releaseDeviceOutput (the consumer is done with it), and `data` empty. An
// input with `device: {gpu, handle, byteLength}` is imported
// (OperonHostDeviceImport) and handed to the backend as GPU memory, read in
// place. A region that cannot be exported is copied to host memory instead.
//
// The library is not linked: its functions are looked up with dlsym, so the
// addon builds without it and a missing library is a clear error at open().
//
// Threads. Backends may call back from any thread, also after Execute
// returned. Every callback but `allocate` is copied into an Event and goes
// through one thread-safe function per instance, in the order the library
// made the calls, to onEvent(kind, token, payload) on the JS thread.
// `allocate` must answer at once: on the JS thread (inside execute) it asks
// JS for room in the worker's shared-memory half (no copy later); elsewhere,
// or when JS has no room, it takes process memory that the response hands
// to JS as an external Buffer (freed by its finalizer).
//
// Input tensors are not copied: the buffers' pointers go to the library as
// they are (views of the shared-memory segment); JS keeps them alive until
// the request is released.
//
// Errors thrown to JS are Errors with `tritonCode`, the TRITONSERVER_Error_Code.

#include <napi.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "operon/host.h"

namespace {

// ---- the library's functions ----

struct HostApi {
  void* handle = nullptr;
  decltype(&OperonHostApiVersion) ApiVersion = nullptr;
  decltype(&OperonHostErrorDelete) ErrorDelete = nullptr;
  decltype(&OperonHostErrorNew) ErrorNew = nullptr;
  decltype(&OperonHostFree) Free = nullptr;
  decltype(&OperonHostSetLogCallback) SetLogCallback = nullptr;
  decltype(&OperonHostBackendLoad) BackendLoad = nullptr;
  decltype(&OperonHostBackendUnload) BackendUnload = nullptr;
  decltype(&OperonHostModelCreate) ModelCreate = nullptr;
  decltype(&OperonHostModelConfig) ModelConfig = nullptr;
  decltype(&OperonHostModelDestroy) ModelDestroy = nullptr;
  decltype(&OperonHostModelGetStatistics) ModelGetStatistics = nullptr;
  decltype(&OperonHostInstanceCreate) InstanceCreate = nullptr;
  decltype(&OperonHostInstanceDestroy) InstanceDestroy = nullptr;
  decltype(&OperonHostExecute) Execute = nullptr;
  decltype(&OperonHostMetricsText) MetricsText = nullptr;
  decltype(&OperonHostDeviceAllocate) DeviceAllocate = nullptr;
  decltype(&OperonHostDeviceFree) DeviceFree = nullptr;
  decltype(&OperonHostDeviceCopyToHost) DeviceCopyToHost = nullptr;
  decltype(&OperonHostDeviceExport) DeviceExport = nullptr;
  decltype(&OperonHostDeviceImport) DeviceImport = nullptr;
  decltype(&OperonHostDeviceImportsClose) DeviceImportsClose = nullptr;
  decltype(&OperonHostDevicePoolGetStatistics) DevicePoolGetStatistics = nullptr;
};

HostApi api;
std::thread::id js_thread;

Napi::Value ThrowMessage(Napi::Env env, uint32_t code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("tritonCode", Napi::Number::New(env, code));
  error.ThrowAsJavaScriptException();
  return env.Undefined();
}

// Throws the library's error to JS and frees it.
Napi::Value ThrowHostError(Napi::Env env, OperonHostError* error) {
  std::string message = error->message != nullptr ? error->message : "(no message)";
  uint32_t code = error->code;
  api.ErrorDelete(error);
  return ThrowMessage(env, code, message);
}

bool Opened(Napi::Env env) {
  if (api.handle != nullptr) return true;
  ThrowMessage(env, OPERON_HOST_ERROR_UNAVAILABLE, "libtritonserver.so is not open (call open() first)");
  return false;
}

template <typename T>
T* HandleOf(Napi::Value value) {
  return value.IsExternal() ? value.As<Napi::External<T>>().Data() : nullptr;
}

// Calls a JS function from a thread-safe function's callback. Not Napi::Function::Call: while Node tears
// the environment down (process exit with events still queued) a call cannot run, and node-addon-api
// would turn that failure into a fatal error; here it is ignored, as is an exception the callback threw.
void CallIgnoringFailure(Napi::Env env, Napi::Function fn, std::initializer_list<napi_value> args) {
  napi_value result;
  std::vector<napi_value> argv(args);
  napi_call_function(env, env.Undefined(), fn, argv.size(), argv.data(), &result);
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
    napi_value ignored;
    napi_get_and_clear_last_exception(env, &ignored);
  }
}

// False while Node tears the environment down (the process exits with events still queued): calls that
// may run JS (setting properties, calling functions) fail then, and node-addon-api would make that fatal.
bool CanRunJs(napi_env env) {
  napi_value object, value;
  if (napi_create_object(env, &object) != napi_ok || napi_get_undefined(env, &value) != napi_ok) return false;
  return napi_set_named_property(env, object, "probe", value) == napi_ok;
}

// ---- logging ----

struct LogRecord {
  uint32_t level;
  std::string file;
  int line;
  std::string message;
};

void CallLog(Napi::Env env, Napi::Function fn, std::nullptr_t*, LogRecord* record) {
  if (env != nullptr && fn != nullptr && CanRunJs(env)) {
    CallIgnoringFailure(env, fn, {Napi::Number::New(env, record->level), Napi::String::New(env, record->file), Napi::Number::New(env, record->line),
                                  Napi::String::New(env, record->message)});
  }
  delete record;
}
using LogTsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, LogRecord, CallLog>;
LogTsfn log_tsfn;
bool log_tsfn_set = false;

void OnLog(void*, uint32_t level, const char* file, int line, const char* message) {
  auto* record = new LogRecord{level, file != nullptr ? file : "", line, message != nullptr ? message : ""};
  if (log_tsfn.NonBlockingCall(record) != napi_ok) delete record;
}

// ---- instances, requests, events ----

struct Allocation {
  // Room in the worker's shared-memory half, given by JS (the Buffer it returned), process memory, or a
  // region of GPU `device`'s pool (device_base).
  Napi::ObjectReference* shm = nullptr;
  void* memory = nullptr;
  void* device_base = nullptr;
  int32_t device = -1;
};

// GPU outputs handed to JS, by their number, until releaseDeviceOutput. JS thread only.
struct DeviceRegion {
  int32_t device;
  void* base;
};
std::unordered_map<double, DeviceRegion> device_regions;
double next_device_region = 1;

struct RequestState {
  double token;
  std::atomic<bool> cancelled{false};
  // Outputs the gateway wants kept on the GPU; set before Execute, read-only after (any thread).
  std::vector<std::string> device_outputs;
  // JS thread only: the request ends once both arrived.
  bool released = false;
  bool final_seen = false;
};

enum class EventKind { kResponse, kReleased, kStatistics, kDropAllocation };

struct OutputCopy {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  void* base;
  uint64_t byte_size;
  Allocation* allocation;
};

struct ParameterCopy {
  std::string name;
  uint32_t type;
  std::string string_value;
  int64_t int_value;
  bool bool_value;
  double double_value;
};

struct Event {
  EventKind kind;
  RequestState* request = nullptr;
  // kResponse
  std::vector<OutputCopy> outputs;
  std::vector<ParameterCopy> parameters;
  bool has_error = false;
  uint32_t error_code = 0;
  std::string error_message;
  bool final = false;
  bool empty = false;
  // kReleased
  uint32_t release_flags = 0;
  // kStatistics
  OperonHostStatistics statistics{};
  // kDropAllocation
  Allocation* allocation = nullptr;
};

struct Instance;
void DeliverEvent(Napi::Env env, Napi::Function fn, Instance* instance, Event* event);
using EventTsfn = Napi::TypedThreadSafeFunction<Instance, Event, DeliverEvent>;

struct Instance {
  OperonHostInstance* handle = nullptr;
  EventTsfn tsfn;
  Napi::FunctionReference allocate;  // JS: (byteLength) => Buffer | undefined
  Napi::Env env = nullptr;
  bool in_execute = false;           // JS thread only
  // Events the backend made on the JS thread during execute: delivered right after it returns, without a
  // trip through the thread-safe function's queue (a loop iteration later). JS thread only.
  std::vector<Event*> local_events;
  Napi::FunctionReference on_event;
  uint64_t live = 0;                 // JS thread only: requests not yet released and finally answered
  std::mutex mutex;
  std::unordered_map<double, RequestState*> requests;  // live, for cancel()
};

void FreeAllocation(Allocation* allocation) {
  if (allocation == nullptr) return;
  if (allocation->shm != nullptr) {
    allocation->shm->Reset();
    delete allocation->shm;
  }
  std::free(allocation->memory);
  if (allocation->device_base != nullptr) {
    if (OperonHostError* error = api.DeviceFree(allocation->device, allocation->device_base)) api.ErrorDelete(error);
  }
  delete allocation;
}

void Post(Instance* instance, Event* event) {
  if (instance->in_execute && std::this_thread::get_id() == js_thread) {
    instance->local_events.push_back(event);
    return;
  }
  if (instance->tsfn.NonBlockingCall(event) != napi_ok) {
    for (auto& output : event->outputs) FreeAllocation(output.allocation);
    FreeAllocation(event->allocation);
    delete event;
  }
}

bool WantsOnDevice(const RequestState* request, const char* output_name) {
  if (request == nullptr || output_name == nullptr || request->device_outputs.empty()) return false;
  for (const std::string& name : request->device_outputs)
    if (name == output_name) return true;
  return false;
}

OperonHostError* Allocate(void* user, void* request_user, const char* output_name, const char* /*datatype*/, const int64_t* /*shape*/,
                          uint32_t /*dims_count*/, uint64_t byte_size, uint32_t preferred_memory_type, int64_t preferred_memory_type_id,
                          void** base, uint32_t* memory_type, int64_t* memory_type_id, void** allocation) {
  auto* instance = static_cast<Instance*>(user);
  auto* held = new Allocation();
  // Kept on the GPU only where both sides want it: the backend asked for device memory, the gateway planned
  // the tensor there. A pool that cannot serve it (out of memory) falls back to host memory, which Triton's
  // contract allows: the tensor then travels as bytes.
  if (preferred_memory_type == OPERON_HOST_MEMORY_GPU && byte_size > 0 && WantsOnDevice(static_cast<RequestState*>(request_user), output_name)) {
    void* device_base = nullptr;
    int32_t device = static_cast<int32_t>(preferred_memory_type_id);
    OperonHostError* error = api.DeviceAllocate(device, byte_size, &device_base);
    if (error == nullptr) {
      held->device_base = device_base;
      held->device = device;
      *base = device_base;
      *memory_type = OPERON_HOST_MEMORY_GPU;
      *memory_type_id = device;
      *allocation = held;
      return nullptr;
    }
    api.ErrorDelete(error);
  }
  *memory_type = OPERON_HOST_MEMORY_CPU;
  *memory_type_id = 0;
  if (std::this_thread::get_id() == js_thread && instance->in_execute && !instance->allocate.IsEmpty() && byte_size > 0) {
    Napi::Env env = instance->env;
    Napi::HandleScope scope(env);
    Napi::Value room = instance->allocate.Call({Napi::Number::New(env, static_cast<double>(byte_size))});
    if (env.IsExceptionPending()) env.GetAndClearPendingException();
    if (room.IsBuffer() && room.As<Napi::Buffer<uint8_t>>().Length() >= byte_size) {
      held->shm = new Napi::ObjectReference(Napi::Persistent(room.As<Napi::Object>()));
      *base = room.As<Napi::Buffer<uint8_t>>().Data();
      *allocation = held;
      return nullptr;
    }
  }
  // 64-byte aligned like the shared-memory ring, so backends see the same alignment either way.
  size_t size = ((byte_size == 0 ? 1 : byte_size) + 63) / 64 * 64;
  held->memory = std::aligned_alloc(64, size);
  if (held->memory == nullptr) {
    delete held;
    return api.ErrorNew(OPERON_HOST_ERROR_UNAVAILABLE, "out of memory for a response output");
  }
  *base = held->memory;
  *allocation = held;
  return nullptr;
}

void ReleaseAllocation(void* user, void* /*request_user*/, void* /*base*/, void* allocation) {
  auto* event = new Event();
  event->kind = EventKind::kDropAllocation;
  event->allocation = static_cast<Allocation*>(allocation);
  Post(static_cast<Instance*>(user), event);
}

void OnResponse(void* user, void* request_user, const OperonHostResponse* response) {
  auto* event = new Event();
  event->kind = EventKind::kResponse;
  event->request = static_cast<RequestState*>(request_user);
  for (uint32_t i = 0; i < response->output_count; ++i) {
    const OperonHostOutput& output = response->outputs[i];
    event->outputs.push_back(OutputCopy{output.name != nullptr ? output.name : "", output.datatype != nullptr ? output.datatype : "",
                                        std::vector<int64_t>(output.shape, output.shape + output.dims_count), output.base, output.byte_size,
                                        static_cast<Allocation*>(output.allocation)});
  }
  for (uint32_t i = 0; i < response->parameter_count; ++i) {
    const OperonHostParameter& parameter = response->parameters[i];
    ParameterCopy copy{parameter.name != nullptr ? parameter.name : "", parameter.type, "", parameter.int_value, parameter.bool_value != 0,
                       parameter.double_value};
    if (parameter.type == OPERON_HOST_PARAMETER_STRING && parameter.string_value != nullptr) copy.string_value = parameter.string_value;
    event->parameters.push_back(std::move(copy));
  }
  if (response->error != nullptr) {
    event->has_error = true;
    event->error_code = response->error->code;
    event->error_message = response->error->message != nullptr ? response->error->message : "";
  }
  event->final = (response->flags & OPERON_HOST_RESPONSE_FINAL) != 0;
  event->empty = response->empty != 0;
  Post(static_cast<Instance*>(user), event);
}

void OnReleased(void* user, void* request_user, uint32_t release_flags) {
  auto* event = new Event();
  event->kind = EventKind::kReleased;
  event->request = static_cast<RequestState*>(request_user);
  event->release_flags = release_flags;
  Post(static_cast<Instance*>(user), event);
}

int32_t IsCancelled(void*, void* request_user) {
  return static_cast<RequestState*>(request_user)->cancelled.load() ? 1 : 0;
}

void OnStatistics(void* user, const OperonHostStatistics* statistics) {
  auto* event = new Event();
  event->kind = EventKind::kStatistics;
  event->request = static_cast<RequestState*>(statistics->request_user);
  event->statistics = *statistics;
  Post(static_cast<Instance*>(user), event);
}

double Elapsed(uint64_t from, uint64_t to) { return to > from ? static_cast<double>(to - from) : 0; }

// A GPU output: exported for another process (`tensor.device`, empty data) and held until
// releaseDeviceOutput, or, when the export fails, copied to host memory and given back to the pool.
Napi::Value DeviceOutput(Napi::Env env, OutputCopy& output, Napi::Object tensor) {
  Allocation* allocation = output.allocation;
  output.allocation = nullptr;
  OperonHostDeviceIpcHandle handle{};
  OperonHostError* error = api.DeviceExport(allocation->device, output.base, &handle);
  if (error == nullptr) {
    double region = next_device_region++;
    int32_t gpu = allocation->device;
    device_regions[region] = DeviceRegion{gpu, allocation->device_base};
    allocation->device_base = nullptr;
    delete allocation;
    Napi::Object device = Napi::Object::New(env);
    device.Set("gpu", Napi::Number::New(env, gpu));
    device.Set("handle", Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(&handle), sizeof handle));
    device.Set("region", Napi::Number::New(env, region));
    tensor.Set("device", device);
    return Napi::Buffer<uint8_t>::New(env, 0);
  }
  api.ErrorDelete(error);
  Napi::Buffer<uint8_t> bytes = Napi::Buffer<uint8_t>::New(env, output.byte_size);
  error = api.DeviceCopyToHost(allocation->device, bytes.Data(), output.base, output.byte_size);
  FreeAllocation(allocation);
  if (error != nullptr) {
    // JS turns the response into an error: these bytes are not the output.
    std::string message = error->message != nullptr ? error->message : "device copy failed";
    api.ErrorDelete(error);
    tensor.Set("error", Napi::String::New(env, "output '" + output.name + "' could not be read from the GPU: " + message));
  }
  return bytes;
}

Napi::Value OutputBuffer(Napi::Env env, OutputCopy& output, Napi::Object tensor) {
  if (output.allocation != nullptr && output.allocation->device_base != nullptr) return DeviceOutput(env, output, tensor);
  Allocation* allocation = output.allocation;
  output.allocation = nullptr;
  if (allocation == nullptr) return Napi::Buffer<uint8_t>::Copy(env, static_cast<uint8_t*>(output.base), output.byte_size);
  if (allocation->shm != nullptr) {
    // The very view JS gave (maybe longer than the output: JS trims it to byteSize); the worker recognises it
    // and sends it without a copy.
    Napi::Value view = allocation->shm->Value();
    FreeAllocation(allocation);
    return view;
  }
  void* memory = allocation->memory;
  allocation->memory = nullptr;
  delete allocation;
  return Napi::Buffer<uint8_t>::New(env, static_cast<uint8_t*>(memory), output.byte_size, [](Napi::Env, uint8_t* data) { std::free(data); });
}

// Forgets a request once JS has seen both its release and its final response.
void MaybeForget(Instance* instance, RequestState* request) {
  if (!request->released || !request->final_seen) return;
  {
    std::lock_guard<std::mutex> lock(instance->mutex);
    instance->requests.erase(request->token);
  }
  delete request;
  // Nothing pending any more: queued events no longer keep the process alive.
  if (instance->live > 0 && --instance->live == 0) instance->tsfn.Unref(instance->env);
}

void DeliverEvent(Napi::Env env, Napi::Function fn, Instance* instance, Event* event) {
  if (env == nullptr || fn == nullptr || !CanRunJs(env)) {
    for (auto& output : event->outputs) FreeAllocation(output.allocation);
    FreeAllocation(event->allocation);
    delete event;
    return;
  }
  Napi::HandleScope scope(env);
  double token = event->request != nullptr ? event->request->token : 0;
  switch (event->kind) {
    case EventKind::kDropAllocation: {
      Allocation* allocation = event->allocation;
      event->allocation = nullptr;
      if (allocation != nullptr && allocation->shm != nullptr) {
        Napi::Object payload = Napi::Object::New(env);
        payload.Set("buffer", allocation->shm->Value());
        CallIgnoringFailure(env, fn, {Napi::String::New(env, "drop"), Napi::Number::New(env, 0), payload});
      }
      FreeAllocation(allocation);
      break;
    }
    case EventKind::kResponse: {
      Napi::Object payload = Napi::Object::New(env);
      Napi::Array outputs = Napi::Array::New(env, event->outputs.size());
      for (size_t i = 0; i < event->outputs.size(); ++i) {
        OutputCopy& output = event->outputs[i];
        Napi::Object tensor = Napi::Object::New(env);
        tensor.Set("name", output.name);
        tensor.Set("datatype", output.datatype);
        Napi::Array shape = Napi::Array::New(env, output.shape.size());
        for (size_t d = 0; d < output.shape.size(); ++d) shape.Set(d, Napi::Number::New(env, static_cast<double>(output.shape[d])));
        tensor.Set("shape", shape);
        tensor.Set("byteSize", Napi::Number::New(env, static_cast<double>(output.byte_size)));
        tensor.Set("data", OutputBuffer(env, output, tensor));
        outputs.Set(i, tensor);
      }
      payload.Set("outputs", outputs);
      Napi::Object parameters = Napi::Object::New(env);
      for (const ParameterCopy& parameter : event->parameters) {
        switch (parameter.type) {
          case OPERON_HOST_PARAMETER_STRING: parameters.Set(parameter.name, parameter.string_value); break;
          case OPERON_HOST_PARAMETER_INT: parameters.Set(parameter.name, Napi::Number::New(env, static_cast<double>(parameter.int_value))); break;
          case OPERON_HOST_PARAMETER_BOOL: parameters.Set(parameter.name, Napi::Boolean::New(env, parameter.bool_value)); break;
          case OPERON_HOST_PARAMETER_DOUBLE: parameters.Set(parameter.name, Napi::Number::New(env, parameter.double_value)); break;
          default: break;
        }
      }
      payload.Set("parameters", parameters);
      if (event->has_error) {
        Napi::Object error = Napi::Object::New(env);
        error.Set("code", Napi::Number::New(env, event->error_code));
        error.Set("message", event->error_message);
        payload.Set("error", error);
      }
      payload.Set("final", Napi::Boolean::New(env, event->final));
      payload.Set("empty", Napi::Boolean::New(env, event->empty));
      CallIgnoringFailure(env, fn, {Napi::String::New(env, "response"), Napi::Number::New(env, token), payload});
      if (event->request != nullptr && event->final) {
        event->request->final_seen = true;
        MaybeForget(instance, event->request);
      }
      break;
    }
    case EventKind::kReleased: {
      Napi::Object payload = Napi::Object::New(env);
      payload.Set("flags", Napi::Number::New(env, event->release_flags));
      CallIgnoringFailure(env, fn, {Napi::String::New(env, "released"), Napi::Number::New(env, token), payload});
      if (event->request != nullptr && (event->release_flags & OPERON_HOST_RELEASE_ALL) != 0) {
        event->request->released = true;
        MaybeForget(instance, event->request);
      }
      break;
    }
    case EventKind::kStatistics: {
      const OperonHostStatistics& s = event->statistics;
      Napi::Object payload = Napi::Object::New(env);
      payload.Set("kind", Napi::String::New(env, s.kind == OPERON_HOST_STATS_BATCH ? "batch" : s.kind == OPERON_HOST_STATS_RESPONSE ? "response" : "request"));
      payload.Set("success", Napi::Boolean::New(env, s.success != 0));
      payload.Set("batchSize", Napi::Number::New(env, static_cast<double>(s.batch_size)));
      payload.Set("computeInputNs", Napi::Number::New(env, Elapsed(s.exec_start_ns, s.compute_start_ns)));
      payload.Set("computeInferNs", Napi::Number::New(env, Elapsed(s.compute_start_ns, s.compute_end_ns)));
      payload.Set("computeOutputNs", Napi::Number::New(env, Elapsed(s.compute_end_ns, s.exec_end_ns)));
      CallIgnoringFailure(env, fn, {Napi::String::New(env, "statistics"), Napi::Number::New(env, token), payload});
      break;
    }
  }
  for (auto& output : event->outputs) FreeAllocation(output.allocation);
  FreeAllocation(event->allocation);
  delete event;
}

// ---- JS functions ----

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
  return *fn != nullptr;
}

Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString() || !info[1].IsFunction()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "open(libraryPath, onLog, verboseLevel)");
  if (api.handle != nullptr) return env.Undefined();
  std::string path = info[0].As<Napi::String>();
  js_thread = std::this_thread::get_id();
  // RTLD_GLOBAL: backends loaded later find their TRITONBACKEND_* / TRITONSERVER_* symbols here.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return ThrowMessage(env, OPERON_HOST_ERROR_UNAVAILABLE, std::string("cannot load ") + path + ": " + (reason != nullptr ? reason : "dlopen failed"));
  }
  HostApi next;
  next.handle = handle;
  std::string missing;
  Resolve(handle, "OperonHostApiVersion", &next.ApiVersion, &missing);
  Resolve(handle, "OperonHostErrorDelete", &next.ErrorDelete, &missing);
  Resolve(handle, "OperonHostErrorNew", &next.ErrorNew, &missing);
  Resolve(handle, "OperonHostFree", &next.Free, &missing);
  Resolve(handle, "OperonHostSetLogCallback", &next.SetLogCallback, &missing);
  Resolve(handle, "OperonHostBackendLoad", &next.BackendLoad, &missing);
  Resolve(handle, "OperonHostBackendUnload", &next.BackendUnload, &missing);
  Resolve(handle, "OperonHostModelCreate", &next.ModelCreate, &missing);
  Resolve(handle, "OperonHostModelConfig", &next.ModelConfig, &missing);
  Resolve(handle, "OperonHostModelDestroy", &next.ModelDestroy, &missing);
  Resolve(handle, "OperonHostModelGetStatistics", &next.ModelGetStatistics, &missing);
  Resolve(handle, "OperonHostInstanceCreate", &next.InstanceCreate, &missing);
  Resolve(handle, "OperonHostInstanceDestroy", &next.InstanceDestroy, &missing);
  Resolve(handle, "OperonHostExecute", &next.Execute, &missing);
  Resolve(handle, "OperonHostMetricsText", &next.MetricsText, &missing);
  Resolve(handle, "OperonHostDeviceAllocate", &next.DeviceAllocate, &missing);
  Resolve(handle, "OperonHostDeviceFree", &next.DeviceFree, &missing);
  Resolve(handle, "OperonHostDeviceCopyToHost", &next.DeviceCopyToHost, &missing);
  Resolve(handle, "OperonHostDeviceExport", &next.DeviceExport, &missing);
  Resolve(handle, "OperonHostDeviceImport", &next.DeviceImport, &missing);
  Resolve(handle, "OperonHostDeviceImportsClose", &next.DeviceImportsClose, &missing);
  Resolve(handle, "OperonHostDevicePoolGetStatistics", &next.DevicePoolGetStatistics, &missing);
  if (!missing.empty()) {
    dlclose(handle);
    return ThrowMessage(env, OPERON_HOST_ERROR_UNAVAILABLE, path + " is not Operon's libtritonserver.so (no " + missing + ")");
  }
  if (next.ApiVersion() != OPERON_HOST_API_VERSION) {
    uint32_t found = next.ApiVersion();
    dlclose(handle);
    return ThrowMessage(env, OPERON_HOST_ERROR_UNAVAILABLE,
                        path + " implements Operon's embedding API version " + std::to_string(found) + ", this addon was built for " +
                            std::to_string(OPERON_HOST_API_VERSION) + " (rebuild: npm install)");
  }
  api = next;
  log_tsfn = LogTsfn::New(env, info[1].As<Napi::Function>(), "operon-tritonserver-log", 0, 1);
  log_tsfn.Unref(env);
  log_tsfn_set = true;
  uint32_t verbose = info[2].IsNumber() ? info[2].As<Napi::Number>().Uint32Value() : 0;
  api.SetLogCallback(OnLog, nullptr, verbose);
  return env.Undefined();
}

Napi::Value LoadBackend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  if (!info[0].IsString() || !info[1].IsString() || !info[2].IsString()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "loadBackend(name, path, configJson)");
  std::string name = info[0].As<Napi::String>(), path = info[1].As<Napi::String>(), config = info[2].As<Napi::String>();
  OperonHostBackend* backend = nullptr;
  if (OperonHostError* error = api.BackendLoad(name.c_str(), path.c_str(), config.c_str(), &backend)) return ThrowHostError(env, error);
  return Napi::External<OperonHostBackend>::New(env, backend);
}

Napi::Value UnloadBackend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  if (auto* backend = HandleOf<OperonHostBackend>(info[0])) api.BackendUnload(backend);
  return env.Undefined();
}

Napi::Value CreateModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  auto* backend = HandleOf<OperonHostBackend>(info[0]);
  if (backend == nullptr || !info[1].IsString() || !info[2].IsNumber() || !info[3].IsString() || !info[4].IsString()) {
    return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "createModel(backend, name, version, repositoryPath, configJson, autoComplete)");
  }
  std::string name = info[1].As<Napi::String>(), repository = info[3].As<Napi::String>(), config = info[4].As<Napi::String>();
  int64_t version = info[2].As<Napi::Number>().Int64Value();
  bool auto_complete = info[5].ToBoolean();
  OperonHostModel* model = nullptr;
  if (OperonHostError* error = api.ModelCreate(backend, name.c_str(), version, repository.c_str(), config.c_str(), auto_complete ? 1 : 0, &model)) {
    return ThrowHostError(env, error);
  }
  return Napi::External<OperonHostModel>::New(env, model);
}

Napi::Value ModelConfig(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  auto* model = HandleOf<OperonHostModel>(info[0]);
  if (model == nullptr) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "modelConfig(model)");
  char* json = nullptr;
  if (OperonHostError* error = api.ModelConfig(model, &json)) return ThrowHostError(env, error);
  Napi::String result = Napi::String::New(env, json != nullptr ? json : "{}");
  api.Free(json);
  return result;
}

Napi::Value ModelStatistics(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  auto* model = HandleOf<OperonHostModel>(info[0]);
  if (model == nullptr) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "modelStatistics(model)");
  OperonHostModelStatistics s{};
  api.ModelGetStatistics(model, &s);
  Napi::Object result = Napi::Object::New(env);
  result.Set("successCount", Napi::Number::New(env, static_cast<double>(s.success_count)));
  result.Set("failureCount", Napi::Number::New(env, static_cast<double>(s.failure_count)));
  result.Set("executionCount", Napi::Number::New(env, static_cast<double>(s.execution_count)));
  result.Set("inferenceCount", Napi::Number::New(env, static_cast<double>(s.inference_count)));
  result.Set("computeInferNs", Napi::Number::New(env, static_cast<double>(s.compute_infer_ns)));
  result.Set("responseCount", Napi::Number::New(env, static_cast<double>(s.response_count)));
  return result;
}

Napi::Value DestroyModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  auto* model = HandleOf<OperonHostModel>(info[0]);
  if (model == nullptr) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "destroyModel(model)");
  if (OperonHostError* error = api.ModelDestroy(model)) return ThrowHostError(env, error);
  return env.Undefined();
}

Napi::Value CreateInstance(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  auto* model = HandleOf<OperonHostModel>(info[0]);
  if (model == nullptr || !info[1].IsString() || !info[2].IsNumber() || !info[3].IsNumber() || !info[5].IsFunction()) {
    return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "createInstance(model, name, kind, deviceId, allocate, onEvent)");
  }
  std::string name = info[1].As<Napi::String>();
  auto* instance = new Instance();
  instance->env = env;
  if (info[4].IsFunction()) instance->allocate = Napi::Persistent(info[4].As<Napi::Function>());
  instance->on_event = Napi::Persistent(info[5].As<Napi::Function>());
  instance->tsfn = EventTsfn::New(env, info[5].As<Napi::Function>(), "operon-tritonserver-events", 0, 1, instance);
  // Pending responses must not keep the worker alive: it exits when the gateway says so.
  instance->tsfn.Unref(env);
  OperonHostCallbacks callbacks{};
  callbacks.user = instance;
  callbacks.allocate = Allocate;
  callbacks.release_allocation = ReleaseAllocation;
  callbacks.response = OnResponse;
  callbacks.released = OnReleased;
  callbacks.is_cancelled = IsCancelled;
  callbacks.statistics = OnStatistics;
  OperonHostInstance* handle = nullptr;
  OperonHostError* error = api.InstanceCreate(model, name.c_str(), info[2].As<Napi::Number>().Uint32Value(), info[3].As<Napi::Number>().Int32Value(),
                                              &callbacks, &handle);
  if (error != nullptr) {
    instance->tsfn.Release();
    instance->allocate.Reset();
    // The thread-safe function may still hold the instance as its context: leaked on purpose (a failed load ends the worker).
    return ThrowHostError(env, error);
  }
  instance->handle = handle;
  return Napi::External<Instance>::New(env, instance);
}

Napi::Value DestroyInstance(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  auto* instance = HandleOf<Instance>(info[0]);
  if (instance == nullptr || instance->handle == nullptr) return env.Undefined();
  OperonHostError* error = api.InstanceDestroy(instance->handle);
  instance->handle = nullptr;
  instance->allocate.Reset();
  instance->on_event.Reset();
  if (error != nullptr) return ThrowHostError(env, error);
  return env.Undefined();
}

// What one request's OperonHostRequest points at, kept alive during Execute.
struct RequestStorage {
  std::string id;
  std::vector<std::string> strings;  // reserved up front: pointers into it stay valid
  std::vector<std::vector<int64_t>> shapes;
  std::vector<OperonHostBuffer> buffers;
  std::vector<OperonHostInput> inputs;
  std::vector<const char*> outputs;
  std::vector<OperonHostParameter> parameters;
};

Napi::Value Execute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  auto* instance = HandleOf<Instance>(info[0]);
  if (instance == nullptr || instance->handle == nullptr || !info[1].IsArray()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "execute(instance, requests)");
  Napi::Array list = info[1].As<Napi::Array>();
  uint32_t count = list.Length();
  std::vector<RequestStorage> storage(count);
  std::vector<OperonHostRequest> requests(count);
  std::vector<RequestState*> states;
  for (uint32_t r = 0; r < count; ++r) {
    Napi::Object js = list.Get(r).As<Napi::Object>();
    RequestStorage& s = storage[r];
    Napi::Array inputs = js.Get("inputs").As<Napi::Array>();
    Napi::Array outputs = js.Has("outputNames") ? js.Get("outputNames").As<Napi::Array>() : Napi::Array::New(env);
    Napi::Array parameters = js.Has("parameters") ? js.Get("parameters").As<Napi::Array>() : Napi::Array::New(env);
    s.strings.reserve(inputs.Length() * 2 + outputs.Length() + parameters.Length() * 2);
    s.shapes.reserve(inputs.Length());
    s.buffers.reserve(inputs.Length());
    for (uint32_t i = 0; i < inputs.Length(); ++i) {
      Napi::Object input = inputs.Get(i).As<Napi::Object>();
      s.strings.push_back(input.Get("name").ToString());
      const char* name = s.strings.back().c_str();
      s.strings.push_back(input.Get("datatype").ToString());
      const char* datatype = s.strings.back().c_str();
      Napi::Array shape = input.Get("shape").As<Napi::Array>();
      s.shapes.emplace_back();
      for (uint32_t d = 0; d < shape.Length(); ++d) s.shapes.back().push_back(shape.Get(d).As<Napi::Number>().Int64Value());
      Napi::Value device = input.Get("device");
      if (device.IsObject()) {
        // Another worker's GPU output: opened here (once per region) and read in place by the backend.
        Napi::Object ref = device.As<Napi::Object>();
        Napi::Value handle = ref.Get("handle");
        if (!handle.IsBuffer() || handle.As<Napi::Buffer<uint8_t>>().Length() != sizeof(OperonHostDeviceIpcHandle) || !ref.Get("gpu").IsNumber() ||
            !ref.Get("byteLength").IsNumber()) {
          return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG,
                              std::string("input '") + name + "': device needs gpu, byteLength and a " + std::to_string(sizeof(OperonHostDeviceIpcHandle)) +
                                  "-byte handle");
        }
        OperonHostDeviceIpcHandle ipc;
        std::memcpy(&ipc, handle.As<Napi::Buffer<uint8_t>>().Data(), sizeof ipc);
        int32_t gpu = ref.Get("gpu").As<Napi::Number>().Int32Value();
        void* imported = nullptr;
        if (OperonHostError* error = api.DeviceImport(gpu, &ipc, &imported)) {
          // Only the gateway hands out handles, from a worker's own export: one that cannot be opened means the
          // producing worker is gone (or its GPU failed), a server-side condition, not the client's mistake.
          std::string message = error->message != nullptr ? error->message : "import failed";
          api.ErrorDelete(error);
          return ThrowMessage(env, OPERON_HOST_ERROR_UNAVAILABLE,
                              std::string("input '") + name + "' on GPU " + std::to_string(gpu) + " cannot be opened (has the worker that produced it exited?): " + message);
        }
        uint64_t byte_size = static_cast<uint64_t>(ref.Get("byteLength").As<Napi::Number>().Int64Value());
        s.buffers.push_back(OperonHostBuffer{imported, byte_size, OPERON_HOST_MEMORY_GPU, gpu});
        s.inputs.push_back(OperonHostInput{name, datatype, s.shapes.back().data(), static_cast<uint32_t>(s.shapes.back().size()), &s.buffers.back(), 1});
        continue;
      }
      Napi::Value data = input.Get("data");
      if (!data.IsBuffer()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, std::string("input '") + name + "' has no data Buffer");
      Napi::Buffer<uint8_t> bytes = data.As<Napi::Buffer<uint8_t>>();
      s.buffers.push_back(OperonHostBuffer{bytes.Data(), bytes.Length(), OPERON_HOST_MEMORY_CPU, 0});
      s.inputs.push_back(OperonHostInput{name, datatype, s.shapes.back().data(), static_cast<uint32_t>(s.shapes.back().size()), &s.buffers.back(), 1});
    }
    for (uint32_t i = 0; i < outputs.Length(); ++i) {
      s.strings.push_back(outputs.Get(i).ToString());
      s.outputs.push_back(s.strings.back().c_str());
    }
    for (uint32_t i = 0; i < parameters.Length(); ++i) {
      Napi::Object parameter = parameters.Get(i).As<Napi::Object>();
      s.strings.push_back(parameter.Get("name").ToString());
      OperonHostParameter p{};
      p.name = s.strings.back().c_str();
      Napi::Value value = parameter.Get("value");
      if (value.IsBoolean()) {
        p.type = OPERON_HOST_PARAMETER_BOOL;
        p.bool_value = value.As<Napi::Boolean>().Value() ? 1 : 0;
      } else if (value.IsNumber() && parameter.Get("type").ToString().Utf8Value() == "int") {
        p.type = OPERON_HOST_PARAMETER_INT;
        p.int_value = value.As<Napi::Number>().Int64Value();
      } else if (value.IsNumber()) {
        p.type = OPERON_HOST_PARAMETER_DOUBLE;
        p.double_value = value.As<Napi::Number>().DoubleValue();
      } else {
        p.type = OPERON_HOST_PARAMETER_STRING;
        s.strings.push_back(value.ToString());
        p.string_value = s.strings.back().c_str();
      }
      s.parameters.push_back(p);
    }
    s.id = js.Has("id") ? js.Get("id").ToString().Utf8Value() : "";
    auto* state = new RequestState();
    state->token = js.Get("token").As<Napi::Number>().DoubleValue();
    if (js.Has("deviceOutputs") && js.Get("deviceOutputs").IsArray()) {
      Napi::Array names = js.Get("deviceOutputs").As<Napi::Array>();
      for (uint32_t i = 0; i < names.Length(); ++i) state->device_outputs.push_back(names.Get(i).ToString());
    }
    states.push_back(state);
    OperonHostRequest& request = requests[r];
    request.user = state;
    request.id = s.id.c_str();
    request.correlation_id = js.Has("correlationId") ? static_cast<uint64_t>(js.Get("correlationId").As<Napi::Number>().Int64Value()) : 0;
    request.correlation_id_string = nullptr;
    request.flags = js.Has("flags") ? js.Get("flags").As<Napi::Number>().Uint32Value() : 0;
    request.inputs = s.inputs.data();
    request.input_count = static_cast<uint32_t>(s.inputs.size());
    request.requested_outputs = s.outputs.data();
    request.requested_output_count = static_cast<uint32_t>(s.outputs.size());
    request.parameters = s.parameters.data();
    request.parameter_count = static_cast<uint32_t>(s.parameters.size());
  }
  {
    std::lock_guard<std::mutex> lock(instance->mutex);
    for (RequestState* state : states) instance->requests[state->token] = state;
  }
  // While requests are pending their events must keep the process alive (a worker's socket does anyway;
  // a script awaiting a response might have nothing else).
  if (count > 0 && instance->live == 0) instance->tsfn.Ref(env);
  instance->live += count;
  instance->in_execute = true;
  OperonHostError* error = api.Execute(instance->handle, requests.data(), count);
  instance->in_execute = false;
  std::vector<Event*> events;
  events.swap(instance->local_events);
  Napi::Function on_event = instance->on_event.Value();
  for (Event* event : events) DeliverEvent(env, on_event, instance, event);
  // An Execute failure was answered by the library (final error responses + releases): JS learns it through them too.
  if (error != nullptr) api.ErrorDelete(error);
  return env.Undefined();
}

Napi::Value Cancel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* instance = HandleOf<Instance>(info[0]);
  if (instance == nullptr || !info[1].IsNumber()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "cancel(instance, token)");
  std::lock_guard<std::mutex> lock(instance->mutex);
  auto found = instance->requests.find(info[1].As<Napi::Number>().DoubleValue());
  if (found != instance->requests.end()) found->second->cancelled.store(true);
  return Napi::Boolean::New(env, found != instance->requests.end());
}

Napi::Value MetricsText(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  char* text = nullptr;
  if (OperonHostError* error = api.MetricsText(&text)) return ThrowHostError(env, error);
  Napi::String result = Napi::String::New(env, text != nullptr ? text : "");
  api.Free(text);
  return result;
}

Napi::Value ReleaseDeviceOutput(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  if (!info[0].IsNumber()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "releaseDeviceOutput(region)");
  auto found = device_regions.find(info[0].As<Napi::Number>().DoubleValue());
  if (found == device_regions.end()) return Napi::Boolean::New(env, false);
  DeviceRegion region = found->second;
  device_regions.erase(found);
  if (OperonHostError* error = api.DeviceFree(region.device, region.base)) return ThrowHostError(env, error);
  return Napi::Boolean::New(env, true);
}

Napi::Value DevicePoolStatistics(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  if (!info[0].IsNumber()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "devicePoolStatistics(gpu)");
  OperonHostDevicePoolStatistics s{};
  api.DevicePoolGetStatistics(info[0].As<Napi::Number>().Int32Value(), &s);
  Napi::Object result = Napi::Object::New(env);
  result.Set("liveRegions", Napi::Number::New(env, static_cast<double>(s.live_regions)));
  result.Set("liveBytes", Napi::Number::New(env, static_cast<double>(s.live_bytes)));
  result.Set("cachedRegions", Napi::Number::New(env, static_cast<double>(s.cached_regions)));
  result.Set("cachedBytes", Napi::Number::New(env, static_cast<double>(s.cached_bytes)));
  result.Set("importedRegions", Napi::Number::New(env, static_cast<double>(s.imported_regions)));
  result.Set("heldOutputs", Napi::Number::New(env, static_cast<double>(device_regions.size())));
  return result;
}

Napi::Value DeviceImportsClose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!Opened(env)) return env.Undefined();
  if (!info[0].IsNumber()) return ThrowMessage(env, OPERON_HOST_ERROR_INVALID_ARG, "deviceImportsClose(gpu)");
  if (OperonHostError* error = api.DeviceImportsClose(info[0].As<Napi::Number>().Int32Value())) return ThrowHostError(env, error);
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("open", Napi::Function::New(env, Open));
  exports.Set("loadBackend", Napi::Function::New(env, LoadBackend));
  exports.Set("unloadBackend", Napi::Function::New(env, UnloadBackend));
  exports.Set("createModel", Napi::Function::New(env, CreateModel));
  exports.Set("modelConfig", Napi::Function::New(env, ModelConfig));
  exports.Set("modelStatistics", Napi::Function::New(env, ModelStatistics));
  exports.Set("destroyModel", Napi::Function::New(env, DestroyModel));
  exports.Set("createInstance", Napi::Function::New(env, CreateInstance));
  exports.Set("destroyInstance", Napi::Function::New(env, DestroyInstance));
  exports.Set("execute", Napi::Function::New(env, Execute));
  exports.Set("cancel", Napi::Function::New(env, Cancel));
  exports.Set("metricsText", Napi::Function::New(env, MetricsText));
  exports.Set("releaseDeviceOutput", Napi::Function::New(env, ReleaseDeviceOutput));
  exports.Set("devicePoolStatistics", Napi::Function::New(env, DevicePoolStatistics));
  exports.Set("deviceImportsClose", Napi::Function::New(env, DeviceImportsClose));
  return exports;
}

}  // namespace

NODE_API_MODULE(operon_tritonhost, Init)
