// Backend, model and instance lifecycle: Operon's host API (OperonHost*)
// drives TRITONBACKEND_Initialize/ModelInitialize/ModelInstanceInitialize and
// their Finalize; the TRITONBACKEND_Backend*/Model*/ModelInstance* getters
// answer the backend. Also the memory manager and backend attributes.
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <map>

#include "internal.h"
#include "json-value.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

using operon::HostError;
using operon::MakeError;
using operon::NullArgument;
using operon::ToHostError;

namespace {

std::mutex registry_mutex;
std::map<std::string, TRITONBACKEND_Backend*>& Backends() {
  static auto* backends = new std::map<std::string, TRITONBACKEND_Backend*>();
  return *backends;
}

std::string ApiVersionText() {
  return std::to_string(TRITONBACKEND_API_VERSION_MAJOR) + "." + std::to_string(TRITONBACKEND_API_VERSION_MINOR);
}

operon_json::Value Bool(bool b) {
  operon_json::Value v;
  v.kind = operon_json::Value::Bool;
  v.boolean = b;
  return v;
}
operon_json::Value Num(const char* text) {
  operon_json::Value v;
  v.kind = operon_json::Value::Number;
  v.text = text;
  return v;
}
operon_json::Value Str(const std::string& text) {
  operon_json::Value v;
  v.kind = operon_json::Value::String;
  v.text = text;
  return v;
}
operon_json::Value Empty(operon_json::Value::Kind kind) {
  operon_json::Value v;
  v.kind = kind;
  return v;
}
void Default(operon_json::Value* object, const char* key, operon_json::Value value) {
  if (object->IsObject() && object->Find(key) == nullptr) object->members.emplace_back(key, std::move(value));
}

bool IntegerText(const std::string& s) {
  size_t i = s.size() > 0 && s[0] == '-' ? 1 : 0;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// Protobuf's JSON mapping writes int64 fields as strings ("dims": ["4"]);
// Triton gives backends numbers, and backends parse them as numbers. The
// model config's int64 fields are turned back into numbers wherever they are
// (parameters' string_value and every other field are left alone).
void NumberInt64Fields(operon_json::Value* v) {
  static const char* const kInt64[] = {"dims", "shape", "max_queue_delay_microseconds", "preferred_batch_size",
                                       "default_timeout_microseconds", "max_sequence_idle_microseconds",
                                       "priority_levels", "default_priority_level", "max_queue_size"};
  if (v->IsArray()) {
    for (auto& item : v->items) NumberInt64Fields(&item);
    return;
  }
  if (!v->IsObject()) return;
  for (auto& m : v->members) {
    if (m.first == "parameters") continue;
    bool int64 = false;
    for (const char* k : kInt64) int64 = int64 || m.first == k;
    if (int64) {
      auto fix = [](operon_json::Value* x) {
        if (x->IsString() && IntegerText(x->text)) x->kind = operon_json::Value::Number;
      };
      fix(&m.second);
      for (auto& item : m.second.items) fix(&item);
    } else {
      NumberInt64Fields(&m.second);
    }
  }
}

// Triton hands backends its normalized config: protobuf's JSON with every
// primitive and repeated field present, defaults included. Backends (and
// Triton's backend utilities) read some of them unconditionally
// (batch_input, batch_output, an input's "optional"...), so the config the
// host gives, which may come straight from config.pbtxt, gets the same
// defaults (those that Triton's backend utilities and example backends read
// without checking). Fields already present are left alone.
std::string NormalizeConfig(const std::string& model_name, const std::string& json, std::string* error) {
  operon_json::Value config;
  if (!operon_json::Parse(json, &config, error)) return "";
  if (!config.IsObject()) {
    *error = "the model config must be a JSON object";
    return "";
  }
  NumberInt64Fields(&config);
  Default(&config, "name", Str(model_name));
  Default(&config, "platform", Str(""));
  Default(&config, "backend", Str(""));
  Default(&config, "max_batch_size", Num("0"));
  Default(&config, "default_model_filename", Str(""));
  Default(&config, "input", Empty(operon_json::Value::Array));
  Default(&config, "output", Empty(operon_json::Value::Array));
  Default(&config, "batch_input", Empty(operon_json::Value::Array));
  Default(&config, "batch_output", Empty(operon_json::Value::Array));
  Default(&config, "parameters", Empty(operon_json::Value::Object));
  for (auto& m : config.members) {
    if (m.first == "input" && m.second.IsArray()) {
      for (auto& in : m.second.items) {
        Default(&in, "data_type", Str("TYPE_INVALID"));
        Default(&in, "format", Str("FORMAT_NONE"));
        Default(&in, "dims", Empty(operon_json::Value::Array));
        Default(&in, "is_shape_tensor", Bool(false));
        Default(&in, "allow_ragged_batch", Bool(false));
        Default(&in, "optional", Bool(false));
        Default(&in, "is_non_linear_format_io", Bool(false));
      }
    } else if (m.first == "output" && m.second.IsArray()) {
      for (auto& out : m.second.items) {
        Default(&out, "data_type", Str("TYPE_INVALID"));
        Default(&out, "dims", Empty(operon_json::Value::Array));
        Default(&out, "label_filename", Str(""));
        Default(&out, "is_shape_tensor", Bool(false));
        Default(&out, "is_non_linear_format_io", Bool(false));
      }
    }
  }
  std::string text;
  operon_json::Write(&text, config);
  return text;
}

// The model config's output names, in order (what a request that names no
// outputs gets, as in Triton). Errors only on unparsable JSON.
bool ParseConfig(const std::string& json, std::vector<std::string>* outputs, std::string* error) {
  operon_json::Value config;
  if (!operon_json::Parse(json, &config, error)) return false;
  if (!config.IsObject()) {
    *error = "the model config must be a JSON object";
    return false;
  }
  outputs->clear();
  if (const operon_json::Value* out = config.Find("output")) {
    for (const auto& o : out->items) {
      const operon_json::Value* name = o.Find("name");
      if (name && name->IsString()) outputs->push_back(name->text);
    }
  }
  return true;
}

// Drops one reference; the last one finalizes and closes the library.
// Called with registry_mutex held.
void ReleaseBackendLocked(TRITONBACKEND_Backend* b) {
  if (--b->references > 0) return;
  Backends().erase(b->name);
  if (b->finalize != nullptr) {
    TRITONSERVER_Error* err = b->finalize(b);
    if (err != nullptr) {
      operon::Log(TRITONSERVER_LOG_ERROR, nullptr, 0,
                  "backend '" + b->name + "' TRITONBACKEND_Finalize failed: " + err->message);
      delete err;
    }
  }
  dlclose(b->handle);
  delete b;
}

template <typename Fn>
Fn Symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

// ---- Host API: backends ----

EXPORT OperonHostError* OperonHostBackendLoad(const char* name, const char* library_path,
                                              const char* backend_config_json, OperonHostBackend** out) {
  if (name == nullptr || *name == '\0') return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostBackendLoad: empty backend name");
  if (library_path == nullptr) return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostBackendLoad: library_path is NULL");
  if (out == nullptr) return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostBackendLoad: backend is NULL");
  std::string config_text = backend_config_json && *backend_config_json ? backend_config_json : "{}";
  operon_json::Value settings;
  std::string parse_error;
  if (!operon_json::Parse(config_text, &settings, &parse_error) || !settings.IsObject())
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "backend '" + std::string(name) + "': backend config is not a JSON object of strings (" +
                                                        (parse_error.empty() ? "not an object" : parse_error) + ")");
  for (const auto& m : settings.members)
    if (!m.second.IsString())
      return HostError(OPERON_HOST_ERROR_INVALID_ARG, "backend '" + std::string(name) + "': backend config value of '" + m.first +
                                                          "' must be a string");
  // Triton's form: {"cmdline":{"key":"value"}}.
  operon_json::Value wrapped;
  wrapped.kind = operon_json::Value::Object;
  wrapped.members.emplace_back("cmdline", settings);
  std::string config_json;
  operon_json::Write(&config_json, wrapped);

  std::lock_guard<std::mutex> lock(registry_mutex);
  auto found = Backends().find(name);
  if (found != Backends().end()) {
    TRITONBACKEND_Backend* b = found->second;
    if (b->library_path != library_path)
      return HostError(OPERON_HOST_ERROR_ALREADY_EXISTS, "backend '" + std::string(name) + "' is already loaded from " +
                                                             b->library_path + ", not " + library_path);
    if (b->config.json != config_json)
      return HostError(OPERON_HOST_ERROR_ALREADY_EXISTS, "backend '" + std::string(name) +
                                                             "' is already loaded with another backend config");
    b->references += 1;
    *out = new OperonHostBackend{b};
    return nullptr;
  }
  struct stat st;
  if (stat(library_path, &st) != 0)
    return HostError(OPERON_HOST_ERROR_NOT_FOUND, "backend '" + std::string(name) + "': library " + library_path + " not found");
  void* handle = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "backend '" + std::string(name) + "': cannot load " + library_path + ": " +
                                                        (why ? why : "unknown dlopen error"));
  }
  auto* b = new TRITONBACKEND_Backend();
  b->name = name;
  b->library_path = library_path;
  std::string path(library_path);
  size_t slash = path.find_last_of('/');
  b->directory = slash == std::string::npos ? "." : path.substr(0, slash);
  b->config.json = config_json;
  b->handle = handle;
  b->initialize = Symbol<BackendInitFn>(handle, "TRITONBACKEND_Initialize");
  b->finalize = Symbol<BackendInitFn>(handle, "TRITONBACKEND_Finalize");
  b->model_initialize = Symbol<ModelInitFn>(handle, "TRITONBACKEND_ModelInitialize");
  b->model_finalize = Symbol<ModelInitFn>(handle, "TRITONBACKEND_ModelFinalize");
  b->instance_initialize = Symbol<InstanceInitFn>(handle, "TRITONBACKEND_ModelInstanceInitialize");
  b->instance_finalize = Symbol<InstanceInitFn>(handle, "TRITONBACKEND_ModelInstanceFinalize");
  b->execute = Symbol<ExecuteFn>(handle, "TRITONBACKEND_ModelInstanceExecute");
  if (b->execute == nullptr) {
    dlclose(handle);
    delete b;
    return HostError(OPERON_HOST_ERROR_NOT_FOUND, "backend '" + std::string(name) + "': " + library_path +
                                                      " does not export TRITONBACKEND_ModelInstanceExecute, which every backend must implement");
  }
  if (b->initialize != nullptr) {
    TRITONSERVER_Error* err = b->initialize(b);
    if (err != nullptr) {
      OperonHostError* e = HostError(err->code, "backend '" + std::string(name) + "' failed to initialize: " + err->message +
                                                    " (Operon implements TRITONBACKEND API " + ApiVersionText() + ")");
      delete err;
      dlclose(handle);
      delete b;
      return e;
    }
  }
  b->references = 1;
  Backends()[b->name] = b;
  *out = new OperonHostBackend{b};
  return nullptr;
}

EXPORT void OperonHostBackendUnload(OperonHostBackend* backend) {
  if (backend == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    ReleaseBackendLocked(backend->backend);
  }
  delete backend;
}

EXPORT uint32_t OperonHostBackendExecutionPolicy(OperonHostBackend* backend) {
  return backend ? static_cast<uint32_t>(backend->backend->policy.load()) : OPERON_HOST_EXECUTION_BLOCKING;
}

// ---- Host API: models ----

EXPORT OperonHostError* OperonHostModelCreate(OperonHostBackend* backend, const char* model_name, int64_t version,
                                              const char* repository_path, const char* config_json, int auto_complete,
                                              OperonHostModel** out) {
  if (backend == nullptr || out == nullptr)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostModelCreate: backend or model is NULL");
  if (model_name == nullptr || *model_name == '\0')
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostModelCreate: empty model name");
  auto* m = new TRITONBACKEND_Model();
  m->backend = backend->backend;
  m->name = model_name;
  m->version = version < 0 ? 0 : static_cast<uint64_t>(version);
  m->repository_path = repository_path ? repository_path : "";
  m->auto_complete = auto_complete != 0;
  std::string error;
  m->config = NormalizeConfig(m->name, config_json && *config_json ? config_json : "{}", &error);
  if (!error.empty() || !ParseConfig(m->config, &m->output_names, &error)) {
    delete m;
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "model '" + std::string(model_name) + "': bad config JSON: " + error);
  }
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    m->backend->references += 1;
  }
  if (m->backend->model_initialize != nullptr) {
    m->initializing = true;
    TRITONSERVER_Error* err = m->backend->model_initialize(m);
    m->initializing = false;
    if (err != nullptr) {
      {
        std::lock_guard<std::mutex> lock(registry_mutex);
        ReleaseBackendLocked(m->backend);
      }
      delete m;
      return ToHostError(err);
    }
  }
  *out = new OperonHostModel{m};
  return nullptr;
}

EXPORT OperonHostError* OperonHostModelConfig(OperonHostModel* model, char** config_json) {
  if (model == nullptr || config_json == nullptr)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostModelConfig: model or config_json is NULL");
  std::lock_guard<std::mutex> lock(model->model->mutex);
  const std::string& c = model->model->config;
  *config_json = static_cast<char*>(std::malloc(c.size() + 1));
  std::memcpy(*config_json, c.c_str(), c.size() + 1);
  return nullptr;
}

EXPORT OperonHostError* OperonHostModelDestroy(OperonHostModel* model) {
  if (model == nullptr) return nullptr;
  TRITONBACKEND_Model* m = model->model;
  if (m->instances.load() > 0)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "model '" + m->name + "' still has " + std::to_string(m->instances.load()) +
                                                        " instance(s); destroy them first");
  TRITONSERVER_Error* err = nullptr;
  if (m->backend->model_finalize != nullptr) err = m->backend->model_finalize(m);
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    ReleaseBackendLocked(m->backend);
  }
  delete m;
  delete model;
  return ToHostError(err);
}

EXPORT void OperonHostModelGetStatistics(OperonHostModel* model, OperonHostModelStatistics* s) {
  if (model == nullptr || s == nullptr) return;
  TRITONBACKEND_Model* m = model->model;
  s->success_count = m->success_count;
  s->failure_count = m->failure_count;
  s->execution_count = m->execution_count;
  s->inference_count = m->inference_count;
  s->compute_infer_ns = m->compute_infer_ns;
  s->response_count = m->response_count;
}

// ---- Host API: instances ----

EXPORT OperonHostError* OperonHostInstanceCreate(OperonHostModel* model, const char* instance_name, uint32_t kind,
                                                 int32_t device_id, const OperonHostCallbacks* callbacks,
                                                 OperonHostInstance** out) {
  if (model == nullptr || out == nullptr)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostInstanceCreate: model or instance is NULL");
  // KIND_GPU reaches the backend with its device (TRITONBACKEND_ModelInstanceKind/DeviceId): the
  // backend decides, as in Triton (a CUDA backend sets up its device; a CPU-only one may refuse). The
  // gateway has refused it already when the host has no such GPU.
  if (kind == OPERON_HOST_KIND_GPU && device_id < 0)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostInstanceCreate: a GPU instance needs a device id >= 0, got " + std::to_string(device_id));
  if (kind > OPERON_HOST_KIND_MODEL)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostInstanceCreate: unknown instance kind " + std::to_string(kind));
  auto* i = new TRITONBACKEND_ModelInstance();
  i->model = model->model;
  i->name = instance_name && *instance_name ? instance_name : model->model->name + "_0";
  i->kind = kind == OPERON_HOST_KIND_AUTO ? TRITONSERVER_INSTANCEGROUPKIND_CPU : static_cast<TRITONSERVER_InstanceGroupKind>(kind);
  i->device_id = device_id;
  if (callbacks != nullptr) i->callbacks = *callbacks;
  // Triton's default host policy names: "cpu" for CPU instances, "gpu_<device>" for GPU ones.
  i->host_policy.json = kind == OPERON_HOST_KIND_GPU ? "{\"gpu_" + std::to_string(device_id) + "\":{}}" : "{\"cpu\":{}}";
  model->model->instances += 1;
  if (i->model->backend->instance_initialize != nullptr) {
    TRITONSERVER_Error* err = i->model->backend->instance_initialize(i);
    if (err != nullptr) {
      model->model->instances -= 1;
      delete i;
      return ToHostError(err);
    }
  }
  *out = new OperonHostInstance{i};
  return nullptr;
}

EXPORT OperonHostError* OperonHostInstanceDestroy(OperonHostInstance* instance) {
  if (instance == nullptr) return nullptr;
  TRITONBACKEND_ModelInstance* i = instance->instance;
  TRITONSERVER_Error* err = nullptr;
  if (i->model->backend->instance_finalize != nullptr) err = i->model->backend->instance_finalize(i);
  i->model->instances -= 1;
  delete i;
  delete instance;
  return ToHostError(err);
}

// ---- TRITONBACKEND_Backend* ----

#define REQUIRE(ptr, fn) \
  if ((ptr) == nullptr) return NullArgument(fn, #ptr)

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendName(TRITONBACKEND_Backend* backend, const char** name) {
  REQUIRE(backend, "TRITONBACKEND_BackendName");
  REQUIRE(name, "TRITONBACKEND_BackendName");
  *name = backend->name.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend* backend,
                                                       TRITONSERVER_Message** backend_config) {
  REQUIRE(backend, "TRITONBACKEND_BackendConfig");
  REQUIRE(backend_config, "TRITONBACKEND_BackendConfig");
  *backend_config = &backend->config;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendExecutionPolicy(TRITONBACKEND_Backend* backend,
                                                                TRITONBACKEND_ExecutionPolicy* policy) {
  REQUIRE(backend, "TRITONBACKEND_BackendExecutionPolicy");
  REQUIRE(policy, "TRITONBACKEND_BackendExecutionPolicy");
  *policy = static_cast<TRITONBACKEND_ExecutionPolicy>(backend->policy.load());
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendSetExecutionPolicy(TRITONBACKEND_Backend* backend,
                                                                   TRITONBACKEND_ExecutionPolicy policy) {
  REQUIRE(backend, "TRITONBACKEND_BackendSetExecutionPolicy");
  if (policy != TRITONBACKEND_EXECUTION_BLOCKING && policy != TRITONBACKEND_EXECUTION_DEVICE_BLOCKING)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     "TRITONBACKEND_BackendSetExecutionPolicy: unknown policy " + std::to_string(policy));
  backend->policy = policy;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendArtifacts(TRITONBACKEND_Backend* backend,
                                                          TRITONBACKEND_ArtifactType* artifact_type,
                                                          const char** location) {
  REQUIRE(backend, "TRITONBACKEND_BackendArtifacts");
  REQUIRE(artifact_type, "TRITONBACKEND_BackendArtifacts");
  REQUIRE(location, "TRITONBACKEND_BackendArtifacts");
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = backend->directory.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendMemoryManager(TRITONBACKEND_Backend* backend,
                                                              TRITONBACKEND_MemoryManager** manager) {
  static TRITONBACKEND_MemoryManager the_manager;
  REQUIRE(backend, "TRITONBACKEND_BackendMemoryManager");
  REQUIRE(manager, "TRITONBACKEND_BackendMemoryManager");
  *manager = &the_manager;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendState(TRITONBACKEND_Backend* backend, void** state) {
  REQUIRE(backend, "TRITONBACKEND_BackendState");
  REQUIRE(state, "TRITONBACKEND_BackendState");
  *state = backend->state.load();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendSetState(TRITONBACKEND_Backend* backend, void* state) {
  REQUIRE(backend, "TRITONBACKEND_BackendSetState");
  backend->state = state;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
    TRITONBACKEND_BackendAttribute*, const TRITONSERVER_InstanceGroupKind, const uint64_t, const uint64_t*,
    const uint64_t) {
  // Operon never asks for backend attributes (it does not call
  // TRITONBACKEND_GetBackendAttribute), so there is nothing to record.
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
    TRITONBACKEND_BackendAttribute*, bool) {
  return nullptr;
}

// ---- Memory manager ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_MemoryManagerAllocate(TRITONBACKEND_MemoryManager* manager, void** buffer,
                                                               const TRITONSERVER_MemoryType memory_type,
                                                               const int64_t memory_type_id,
                                                               const uint64_t byte_size) {
  REQUIRE(manager, "TRITONBACKEND_MemoryManagerAllocate");
  REQUIRE(buffer, "TRITONBACKEND_MemoryManagerAllocate");
  // GPU memory comes from the process's per-GPU pool (device-pool.cc); its
  // errors (no driver, out of memory) keep their codes and messages.
  if (memory_type == TRITONSERVER_MEMORY_GPU) {
    OperonHostError* e = OperonHostDeviceAllocate(static_cast<int32_t>(memory_type_id), byte_size, buffer);
    if (e == nullptr) return nullptr;
    TRITONSERVER_Error* err = MakeError(static_cast<TRITONSERVER_Error_Code>(e->code),
                                        std::string("TRITONBACKEND_MemoryManagerAllocate: ") + e->message);
    OperonHostErrorDelete(e);
    return err;
  }
  if (memory_type != TRITONSERVER_MEMORY_CPU && memory_type != TRITONSERVER_MEMORY_CPU_PINNED)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     "TRITONBACKEND_MemoryManagerAllocate: unknown memory type " + std::to_string(memory_type));
  // CPU_PINNED is served from ordinary host memory: without a GPU there is
  // nothing to pin for.
  void* p = std::malloc(byte_size == 0 ? 1 : byte_size);
  if (p == nullptr)
    return MakeError(TRITONSERVER_ERROR_UNAVAILABLE,
                     "TRITONBACKEND_MemoryManagerAllocate: out of memory for " + std::to_string(byte_size) + " bytes");
  *buffer = p;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_MemoryManagerFree(TRITONBACKEND_MemoryManager* manager, void* buffer,
                                                           const TRITONSERVER_MemoryType memory_type,
                                                           const int64_t memory_type_id) {
  REQUIRE(manager, "TRITONBACKEND_MemoryManagerFree");
  if (memory_type == TRITONSERVER_MEMORY_GPU) {
    OperonHostError* e = OperonHostDeviceFree(static_cast<int32_t>(memory_type_id), buffer);
    if (e == nullptr) return nullptr;
    TRITONSERVER_Error* err = MakeError(static_cast<TRITONSERVER_Error_Code>(e->code),
                                        std::string("TRITONBACKEND_MemoryManagerFree: ") + e->message);
    OperonHostErrorDelete(e);
    return err;
  }
  std::free(buffer);
  return nullptr;
}

// ---- TRITONBACKEND_Model* ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name) {
  REQUIRE(model, "TRITONBACKEND_ModelName");
  REQUIRE(name, "TRITONBACKEND_ModelName");
  *name = model->name.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version) {
  REQUIRE(model, "TRITONBACKEND_ModelVersion");
  REQUIRE(version, "TRITONBACKEND_ModelVersion");
  *version = model->version;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelRepository(TRITONBACKEND_Model* model,
                                                         TRITONBACKEND_ArtifactType* artifact_type,
                                                         const char** location) {
  REQUIRE(model, "TRITONBACKEND_ModelRepository");
  REQUIRE(artifact_type, "TRITONBACKEND_ModelRepository");
  REQUIRE(location, "TRITONBACKEND_ModelRepository");
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = model->repository_path.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model* model, const uint32_t config_version,
                                                     TRITONSERVER_Message** model_config) {
  REQUIRE(model, "TRITONBACKEND_ModelConfig");
  REQUIRE(model_config, "TRITONBACKEND_ModelConfig");
  if (config_version != 1)
    return MakeError(TRITONSERVER_ERROR_UNSUPPORTED,
                     "TRITONBACKEND_ModelConfig: config version " + std::to_string(config_version) + " is not supported (only 1)");
  std::lock_guard<std::mutex> lock(model->mutex);
  *model_config = new TRITONSERVER_Message{model->config};
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model* model,
                                                                 bool* auto_complete_config) {
  REQUIRE(model, "TRITONBACKEND_ModelAutoCompleteConfig");
  REQUIRE(auto_complete_config, "TRITONBACKEND_ModelAutoCompleteConfig");
  *auto_complete_config = model->auto_complete;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model* model, const uint32_t config_version,
                                                        TRITONSERVER_Message* model_config) {
  REQUIRE(model, "TRITONBACKEND_ModelSetConfig");
  REQUIRE(model_config, "TRITONBACKEND_ModelSetConfig");
  if (config_version != 1)
    return MakeError(TRITONSERVER_ERROR_UNSUPPORTED,
                     "TRITONBACKEND_ModelSetConfig: config version " + std::to_string(config_version) + " is not supported (only 1)");
  if (!model->initializing)
    return MakeError(TRITONSERVER_ERROR_UNAVAILABLE,
                     "TRITONBACKEND_ModelSetConfig: model '" + model->name + "' can only set its config during TRITONBACKEND_ModelInitialize");
  std::vector<std::string> outputs;
  std::string error;
  if (!ParseConfig(model_config->json, &outputs, &error))
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_ModelSetConfig: bad config JSON: " + error);
  std::lock_guard<std::mutex> lock(model->mutex);
  model->config = model_config->json;
  model->output_names = std::move(outputs);
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelServer(TRITONBACKEND_Model* model, TRITONSERVER_Server** server) {
  // A placeholder handle: Operon implements none of the TRITONSERVER_Server*
  // functions (BLS), so a backend can hold it but not use it.
  static TRITONSERVER_Server the_server;
  REQUIRE(model, "TRITONBACKEND_ModelServer");
  REQUIRE(server, "TRITONBACKEND_ModelServer");
  *server = &the_server;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelBackend(TRITONBACKEND_Model* model, TRITONBACKEND_Backend** backend) {
  REQUIRE(model, "TRITONBACKEND_ModelBackend");
  REQUIRE(backend, "TRITONBACKEND_ModelBackend");
  *backend = model->backend;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state) {
  REQUIRE(model, "TRITONBACKEND_ModelState");
  REQUIRE(state, "TRITONBACKEND_ModelState");
  *state = model->state.load();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state) {
  REQUIRE(model, "TRITONBACKEND_ModelSetState");
  model->state = state;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelReportMemoryUsage(TRITONBACKEND_Model* model,
                                                                TRITONSERVER_BufferAttributes**, uint32_t) {
  REQUIRE(model, "TRITONBACKEND_ModelReportMemoryUsage");
  return nullptr;  // accepted; Operon does not report per-model memory yet
}

// ---- TRITONBACKEND_ModelInstance* ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance* instance, const char** name) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceName");
  REQUIRE(name, "TRITONBACKEND_ModelInstanceName");
  *name = instance->name.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance* instance,
                                                           TRITONSERVER_InstanceGroupKind* kind) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceKind");
  REQUIRE(kind, "TRITONBACKEND_ModelInstanceKind");
  *kind = instance->kind;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance* instance,
                                                               int32_t* device_id) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceDeviceId");
  REQUIRE(device_id, "TRITONBACKEND_ModelInstanceDeviceId");
  *device_id = instance->device_id;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceHostPolicy(TRITONBACKEND_ModelInstance* instance,
                                                                 TRITONSERVER_Message** host_policy) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceHostPolicy");
  REQUIRE(host_policy, "TRITONBACKEND_ModelInstanceHostPolicy");
  *host_policy = &instance->host_policy;  // owned by the instance
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceIsPassive(TRITONBACKEND_ModelInstance* instance,
                                                                bool* is_passive) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceIsPassive");
  REQUIRE(is_passive, "TRITONBACKEND_ModelInstanceIsPassive");
  *is_passive = false;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileCount(TRITONBACKEND_ModelInstance* instance,
                                                                   uint32_t* count) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceProfileCount");
  REQUIRE(count, "TRITONBACKEND_ModelInstanceProfileCount");
  *count = 0;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileName(TRITONBACKEND_ModelInstance* instance,
                                                                  const uint32_t index, const char**) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceProfileName");
  return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_ModelInstanceProfileName: profile index " +
                                                       std::to_string(index) + " out of range (the instance has 0)");
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceCount(TRITONBACKEND_ModelInstance* instance,
                                                                           uint32_t* count) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceSecondaryDeviceCount");
  REQUIRE(count, "TRITONBACKEND_ModelInstanceSecondaryDeviceCount");
  *count = 0;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceProperties(
    TRITONBACKEND_ModelInstance* instance, uint32_t index, const char**, int64_t*) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceSecondaryDeviceProperties");
  return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_ModelInstanceSecondaryDeviceProperties: index " +
                                                       std::to_string(index) + " out of range (the instance has 0)");
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* instance,
                                                            TRITONBACKEND_Model** model) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceModel");
  REQUIRE(model, "TRITONBACKEND_ModelInstanceModel");
  *model = instance->model;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* instance, void** state) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceState");
  REQUIRE(state, "TRITONBACKEND_ModelInstanceState");
  *state = instance->state.load();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* instance, void* state) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceSetState");
  instance->state = state;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportMemoryUsage(TRITONBACKEND_ModelInstance* instance,
                                                                        TRITONSERVER_BufferAttributes**, uint32_t) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceReportMemoryUsage");
  return nullptr;
}
