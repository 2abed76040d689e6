// The objects behind the opaque handles of Triton's API and Operon's host
// API, shared by the library's translation units. Nothing here is exported:
// the library is built with -fvisibility=hidden and only the functions
// declared in the public headers carry default visibility.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "operon/host.h"
#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};

struct TRITONSERVER_Message {
  std::string json;
};

struct TRITONSERVER_Parameter {
  std::string name;
  TRITONSERVER_ParameterType type = TRITONSERVER_PARAMETER_STRING;
  std::string string_value;
  int64_t int_value = 0;
  bool bool_value = false;
  double double_value = 0;
  const void* bytes = nullptr;  // BYTES: not owned (Triton's rule)
  uint64_t byte_size = 0;
  std::string owned_bytes;      // BYTES values copied from a host request
};

struct TRITONSERVER_BufferAttributes {
  TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
  int64_t memory_type_id = 0;
  size_t byte_size = 0;
  void* cuda_ipc_handle = nullptr;
};

struct TRITONBACKEND_MemoryManager {};
struct TRITONSERVER_Server {};

namespace operon {

// Builds an error (message copied). Never returns NULL.
TRITONSERVER_Error* MakeError(TRITONSERVER_Error_Code code, std::string message);
// UNSUPPORTED naming the function Operon does not implement.
TRITONSERVER_Error* Unsupported(const char* function, const char* why);
// INVALID_ARG for a NULL argument of `function`.
TRITONSERVER_Error* NullArgument(const char* function, const char* argument);
OperonHostError* ToHostError(TRITONSERVER_Error* error);  // takes `error`
OperonHostError* HostError(uint32_t code, const std::string& message);
void Log(TRITONSERVER_LogLevel level, const char* file, int line, const std::string& message);
uint64_t NowNs();
// True when [base, base + byte_size) lies inside one live region of GPU `device`'s pool (device-pool.cc).
bool DeviceRegionHolds(int32_t device, const void* base, uint64_t byte_size);

}  // namespace operon

using BackendInitFn = TRITONSERVER_Error* (*)(TRITONBACKEND_Backend*);
using ModelInitFn = TRITONSERVER_Error* (*)(TRITONBACKEND_Model*);
using InstanceInitFn = TRITONSERVER_Error* (*)(TRITONBACKEND_ModelInstance*);
using ExecuteFn = TRITONSERVER_Error* (*)(TRITONBACKEND_ModelInstance*, TRITONBACKEND_Request**, const uint32_t);

struct TRITONBACKEND_Backend {
  std::string name;
  std::string library_path;
  std::string directory;
  TRITONSERVER_Message config;  // {"cmdline":{...}}
  void* handle = nullptr;
  BackendInitFn initialize = nullptr, finalize = nullptr;
  ModelInitFn model_initialize = nullptr, model_finalize = nullptr;
  InstanceInitFn instance_initialize = nullptr, instance_finalize = nullptr;
  ExecuteFn execute = nullptr;
  std::atomic<void*> state{nullptr};
  std::atomic<int> policy{TRITONBACKEND_EXECUTION_BLOCKING};
  int references = 0;  // guarded by the registry's mutex
};

struct OperonHostBackend {
  TRITONBACKEND_Backend* backend;
};

struct TRITONBACKEND_Model {
  TRITONBACKEND_Backend* backend = nullptr;
  std::string name;
  uint64_t version = 0;
  std::string repository_path;
  bool auto_complete = false;
  std::atomic<bool> initializing{false};
  std::mutex mutex;  // guards config and output_names
  std::string config;
  std::vector<std::string> output_names;
  std::atomic<void*> state{nullptr};
  std::atomic<int> instances{0};
  // Pull statistics (OperonHostModelGetStatistics).
  std::atomic<uint64_t> success_count{0}, failure_count{0}, execution_count{0},
      inference_count{0}, compute_infer_ns{0}, response_count{0};
};

struct OperonHostModel {
  TRITONBACKEND_Model* model;
};

struct TRITONBACKEND_ModelInstance {
  TRITONBACKEND_Model* model = nullptr;
  std::string name;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int32_t device_id = 0;
  OperonHostCallbacks callbacks{};
  TRITONSERVER_Message host_policy;
  std::atomic<void*> state{nullptr};
};

struct OperonHostInstance {
  TRITONBACKEND_ModelInstance* instance;
};

struct TRITONBACKEND_Input {
  std::string name;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<OperonHostBuffer> buffers;
  std::vector<TRITONSERVER_BufferAttributes> attributes;
  uint64_t byte_size = 0;
};

// What a request, its responses and its response factories share: the
// instance (for the callbacks) and the host's token. Responses and factories
// may outlive the request (decoupled models), so they hold this, not it.
struct RequestContext {
  TRITONBACKEND_ModelInstance* instance;
  void* user;
};

struct Batch;

struct TRITONBACKEND_Request {
  Batch* batch = nullptr;
  std::shared_ptr<RequestContext> context;
  std::string id;
  uint64_t correlation_id = 0;
  std::string correlation_id_string;
  bool correlation_is_string = false;
  uint32_t flags = 0;
  std::vector<TRITONBACKEND_Input> inputs;
  std::vector<std::string> requested_outputs;
  std::vector<TRITONSERVER_Parameter> parameters;
  std::atomic<bool> released{false};
};

// The requests of one Execute call live in one allocation, freed when the
// last is released and Execute returned (`references` counts both).
struct Batch {
  std::unique_ptr<TRITONBACKEND_Request[]> requests;
  uint32_t count = 0;
  std::atomic<int> references{0};
};
void BatchUnref(Batch* batch);

struct TRITONBACKEND_ResponseFactory {
  std::shared_ptr<RequestContext> context;
};

struct TRITONBACKEND_Output {
  RequestContext* context = nullptr;  // the owning response's
  std::string name;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> shape;
  void* base = nullptr;
  uint64_t byte_size = 0;
  bool has_buffer = false;
  bool library_owned = false;  // malloc'd by the library (no allocate callback)
  void* allocation = nullptr;
  TRITONSERVER_BufferAttributes attributes;
};

struct TRITONBACKEND_Response {
  std::shared_ptr<RequestContext> context;
  std::vector<std::unique_ptr<TRITONBACKEND_Output>> outputs;
  std::vector<TRITONSERVER_Parameter> parameters;
};

struct TRITONBACKEND_ModelInstanceResponseStatistics {
  TRITONBACKEND_ModelInstance* instance = nullptr;
  TRITONBACKEND_ResponseFactory* factory = nullptr;
  uint64_t response_start = 0, compute_output_start = 0, response_end = 0;
  bool has_error = false;
};

struct TRITONBACKEND_BackendAttribute {};
