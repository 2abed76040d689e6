// Errors, datatypes, memory types, parameters, messages, buffer attributes,
// logging: the value types of Triton's server API.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>

#include "internal.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace operon {

TRITONSERVER_Error* MakeError(TRITONSERVER_Error_Code code, std::string message) {
  return new TRITONSERVER_Error{code, std::move(message)};
}

TRITONSERVER_Error* Unsupported(const char* function, const char* why) {
  return MakeError(TRITONSERVER_ERROR_UNSUPPORTED, std::string(function) + " is not supported by Operon" +
                                                       (why && *why ? std::string(": ") + why : std::string()));
}

TRITONSERVER_Error* NullArgument(const char* function, const char* argument) {
  return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(function) + ": argument '" + argument + "' is NULL");
}

OperonHostError* HostError(uint32_t code, const std::string& message) {
  auto* e = static_cast<OperonHostError*>(std::malloc(sizeof(OperonHostError)));
  e->code = code;
  e->message = static_cast<char*>(std::malloc(message.size() + 1));
  std::memcpy(e->message, message.c_str(), message.size() + 1);
  return e;
}

OperonHostError* ToHostError(TRITONSERVER_Error* error) {
  if (error == nullptr) return nullptr;
  OperonHostError* e = HostError(error->code, error->message);
  delete error;
  return e;
}

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {
std::mutex log_mutex;
OperonHostLogFn log_fn = nullptr;
void* log_user = nullptr;
std::atomic<uint32_t> log_verbose{0};
}  // namespace

void Log(TRITONSERVER_LogLevel level, const char* file, int line, const std::string& message) {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (log_fn != nullptr) {
    log_fn(log_user, level, file, line, message.c_str());
    return;
  }
  static const char letters[] = {'I', 'W', 'E', 'V'};
  char letter = level <= TRITONSERVER_LOG_VERBOSE ? letters[level] : '?';
  if (file != nullptr)
    std::fprintf(stderr, "%c %s:%d] %s\n", letter, file, line, message.c_str());
  else
    std::fprintf(stderr, "%c %s\n", letter, message.c_str());
}

void SetLog(OperonHostLogFn fn, void* user, uint32_t verbose) {
  std::lock_guard<std::mutex> lock(log_mutex);
  log_fn = fn;
  log_user = user;
  log_verbose = verbose;
}

bool VerboseEnabled() { return log_verbose.load() > 0; }

}  // namespace operon

using operon::MakeError;
using operon::NullArgument;

// ---- Host API: errors, memory, versions, log ----

EXPORT void OperonHostErrorDelete(OperonHostError* error) {
  if (error == nullptr) return;
  std::free(error->message);
  std::free(error);
}

EXPORT void OperonHostFree(void* pointer) { std::free(pointer); }

EXPORT OperonHostError* OperonHostErrorNew(uint32_t code, const char* message) {
  return operon::HostError(code, message ? message : "");
}

EXPORT uint32_t OperonHostApiVersion(void) { return OPERON_HOST_API_VERSION; }

EXPORT void OperonHostTritonApiVersion(uint32_t* backend_major, uint32_t* backend_minor, uint32_t* server_major,
                                       uint32_t* server_minor) {
  if (backend_major) *backend_major = TRITONBACKEND_API_VERSION_MAJOR;
  if (backend_minor) *backend_minor = TRITONBACKEND_API_VERSION_MINOR;
  if (server_major) *server_major = TRITONSERVER_API_VERSION_MAJOR;
  if (server_minor) *server_minor = TRITONSERVER_API_VERSION_MINOR;
}

EXPORT void OperonHostSetLogCallback(OperonHostLogFn fn, void* user, uint32_t verbose_level) {
  operon::SetLog(fn, user, verbose_level);
}

// ---- Versions ----

EXPORT TRITONSERVER_Error* TRITONSERVER_ApiVersion(uint32_t* major, uint32_t* minor) {
  if (!major || !minor) return NullArgument("TRITONSERVER_ApiVersion", !major ? "major" : "minor");
  *major = TRITONSERVER_API_VERSION_MAJOR;
  *minor = TRITONSERVER_API_VERSION_MINOR;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor) {
  if (!major || !minor) return NullArgument("TRITONBACKEND_ApiVersion", !major ? "major" : "minor");
  *major = TRITONBACKEND_API_VERSION_MAJOR;
  *minor = TRITONBACKEND_API_VERSION_MINOR;
  return nullptr;
}

// ---- Errors ----

EXPORT TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg) {
  return MakeError(code, msg ? msg : "");
}

EXPORT void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error) { delete error; }

EXPORT TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error) {
  return error ? error->code : TRITONSERVER_ERROR_UNKNOWN;
}

EXPORT const char* TRITONSERVER_ErrorCodeString(TRITONSERVER_Error* error) {
  switch (error ? error->code : TRITONSERVER_ERROR_UNKNOWN) {
    case TRITONSERVER_ERROR_INTERNAL: return "Internal";
    case TRITONSERVER_ERROR_NOT_FOUND: return "Not found";
    case TRITONSERVER_ERROR_INVALID_ARG: return "Invalid argument";
    case TRITONSERVER_ERROR_UNAVAILABLE: return "Unavailable";
    case TRITONSERVER_ERROR_UNSUPPORTED: return "Unsupported";
    case TRITONSERVER_ERROR_ALREADY_EXISTS: return "Already exists";
    case TRITONSERVER_ERROR_CANCELLED: return "Cancelled";
    default: return "Unknown";
  }
}

EXPORT const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error) {
  return error ? error->message.c_str() : "";
}

// ---- Datatypes and memory types ----

namespace {
struct TypeName {
  TRITONSERVER_DataType type;
  const char* name;
  uint32_t size;
};
const TypeName kTypes[] = {
    {TRITONSERVER_TYPE_BOOL, "BOOL", 1},   {TRITONSERVER_TYPE_UINT8, "UINT8", 1},
    {TRITONSERVER_TYPE_UINT16, "UINT16", 2}, {TRITONSERVER_TYPE_UINT32, "UINT32", 4},
    {TRITONSERVER_TYPE_UINT64, "UINT64", 8}, {TRITONSERVER_TYPE_INT8, "INT8", 1},
    {TRITONSERVER_TYPE_INT16, "INT16", 2},   {TRITONSERVER_TYPE_INT32, "INT32", 4},
    {TRITONSERVER_TYPE_INT64, "INT64", 8},   {TRITONSERVER_TYPE_FP16, "FP16", 2},
    {TRITONSERVER_TYPE_FP32, "FP32", 4},     {TRITONSERVER_TYPE_FP64, "FP64", 8},
    {TRITONSERVER_TYPE_BYTES, "BYTES", 0},   {TRITONSERVER_TYPE_BF16, "BF16", 2},
};
}  // namespace

EXPORT const char* TRITONSERVER_DataTypeString(TRITONSERVER_DataType datatype) {
  for (const auto& t : kTypes)
    if (t.type == datatype) return t.name;
  return "<invalid>";
}

EXPORT TRITONSERVER_DataType TRITONSERVER_StringToDataType(const char* dtype) {
  if (dtype == nullptr) return TRITONSERVER_TYPE_INVALID;
  for (const auto& t : kTypes)
    if (std::strcmp(t.name, dtype) == 0) return t.type;
  return TRITONSERVER_TYPE_INVALID;
}

EXPORT uint32_t TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType datatype) {
  for (const auto& t : kTypes)
    if (t.type == datatype) return t.size;
  return 0;
}

EXPORT const char* TRITONSERVER_MemoryTypeString(TRITONSERVER_MemoryType memtype) {
  switch (memtype) {
    case TRITONSERVER_MEMORY_CPU: return "CPU";
    case TRITONSERVER_MEMORY_CPU_PINNED: return "CPU_PINNED";
    case TRITONSERVER_MEMORY_GPU: return "GPU";
    default: return "<invalid>";
  }
}

EXPORT const char* TRITONSERVER_ParameterTypeString(TRITONSERVER_ParameterType paramtype) {
  switch (paramtype) {
    case TRITONSERVER_PARAMETER_STRING: return "STRING";
    case TRITONSERVER_PARAMETER_INT: return "INT";
    case TRITONSERVER_PARAMETER_BOOL: return "BOOL";
    case TRITONSERVER_PARAMETER_DOUBLE: return "DOUBLE";
    case TRITONSERVER_PARAMETER_BYTES: return "BYTES";
    default: return "<invalid>";
  }
}

EXPORT const char* TRITONSERVER_InstanceGroupKindString(TRITONSERVER_InstanceGroupKind kind) {
  switch (kind) {
    case TRITONSERVER_INSTANCEGROUPKIND_AUTO: return "AUTO";
    case TRITONSERVER_INSTANCEGROUPKIND_CPU: return "CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU: return "GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL: return "MODEL";
    default: return "<invalid>";
  }
}

// ---- Parameters ----

EXPORT TRITONSERVER_Parameter* TRITONSERVER_ParameterNew(const char* name, const TRITONSERVER_ParameterType type,
                                                         const void* value) {
  if (name == nullptr || value == nullptr) return nullptr;
  auto* p = new TRITONSERVER_Parameter();
  p->name = name;
  p->type = type;
  switch (type) {
    case TRITONSERVER_PARAMETER_STRING: p->string_value = static_cast<const char*>(value); break;
    case TRITONSERVER_PARAMETER_INT: p->int_value = *static_cast<const int64_t*>(value); break;
    case TRITONSERVER_PARAMETER_BOOL: p->bool_value = *static_cast<const bool*>(value); break;
    case TRITONSERVER_PARAMETER_DOUBLE: p->double_value = *static_cast<const double*>(value); break;
    default: delete p; return nullptr;  // BYTES goes through ParameterBytesNew
  }
  return p;
}

EXPORT TRITONSERVER_Parameter* TRITONSERVER_ParameterBytesNew(const char* name, const void* byte_ptr,
                                                              const uint64_t size) {
  if (name == nullptr) return nullptr;
  auto* p = new TRITONSERVER_Parameter();
  p->name = name;
  p->type = TRITONSERVER_PARAMETER_BYTES;
  p->bytes = byte_ptr;
  p->byte_size = size;
  return p;
}

EXPORT void TRITONSERVER_ParameterDelete(TRITONSERVER_Parameter* parameter) { delete parameter; }

// ---- Messages ----

EXPORT TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message** message, const char* base,
                                                                     size_t byte_size) {
  if (message == nullptr) return NullArgument("TRITONSERVER_MessageNewFromSerializedJson", "message");
  if (base == nullptr && byte_size > 0) return NullArgument("TRITONSERVER_MessageNewFromSerializedJson", "base");
  *message = new TRITONSERVER_Message{std::string(base ? base : "", byte_size)};
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message) {
  delete message;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message* message, const char** base,
                                                               size_t* byte_size) {
  if (message == nullptr) return NullArgument("TRITONSERVER_MessageSerializeToJson", "message");
  if (base == nullptr || byte_size == nullptr)
    return NullArgument("TRITONSERVER_MessageSerializeToJson", base == nullptr ? "base" : "byte_size");
  *base = message->json.c_str();
  *byte_size = message->json.size();
  return nullptr;
}

// ---- Buffer attributes ----

#define CHECK_ATTR(fn)                                          \
  if (buffer_attributes == nullptr) return NullArgument(fn, "buffer_attributes")

EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesNew(TRITONSERVER_BufferAttributes** buffer_attributes) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesNew");
  *buffer_attributes = new TRITONSERVER_BufferAttributes();
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesDelete(TRITONSERVER_BufferAttributes* buffer_attributes) {
  delete buffer_attributes;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetMemoryTypeId(
    TRITONSERVER_BufferAttributes* buffer_attributes, int64_t memory_type_id) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesSetMemoryTypeId");
  buffer_attributes->memory_type_id = memory_type_id;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetMemoryType(TRITONSERVER_BufferAttributes* buffer_attributes,
                                                                      TRITONSERVER_MemoryType memory_type) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesSetMemoryType");
  buffer_attributes->memory_type = memory_type;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetCudaIpcHandle(
    TRITONSERVER_BufferAttributes* buffer_attributes, void* cuda_ipc_handle) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesSetCudaIpcHandle");
  buffer_attributes->cuda_ipc_handle = cuda_ipc_handle;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetByteSize(TRITONSERVER_BufferAttributes* buffer_attributes,
                                                                    size_t byte_size) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesSetByteSize");
  buffer_attributes->byte_size = byte_size;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesMemoryTypeId(TRITONSERVER_BufferAttributes* buffer_attributes,
                                                                     int64_t* memory_type_id) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesMemoryTypeId");
  if (memory_type_id == nullptr) return NullArgument("TRITONSERVER_BufferAttributesMemoryTypeId", "memory_type_id");
  *memory_type_id = buffer_attributes->memory_type_id;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesMemoryType(TRITONSERVER_BufferAttributes* buffer_attributes,
                                                                   TRITONSERVER_MemoryType* memory_type) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesMemoryType");
  if (memory_type == nullptr) return NullArgument("TRITONSERVER_BufferAttributesMemoryType", "memory_type");
  *memory_type = buffer_attributes->memory_type;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesCudaIpcHandle(TRITONSERVER_BufferAttributes* buffer_attributes,
                                                                      void** cuda_ipc_handle) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesCudaIpcHandle");
  if (cuda_ipc_handle == nullptr) return NullArgument("TRITONSERVER_BufferAttributesCudaIpcHandle", "cuda_ipc_handle");
  *cuda_ipc_handle = buffer_attributes->cuda_ipc_handle;
  return nullptr;
}
EXPORT TRITONSERVER_Error* TRITONSERVER_BufferAttributesByteSize(TRITONSERVER_BufferAttributes* buffer_attributes,
                                                                 size_t* byte_size) {
  CHECK_ATTR("TRITONSERVER_BufferAttributesByteSize");
  if (byte_size == nullptr) return NullArgument("TRITONSERVER_BufferAttributesByteSize", "byte_size");
  *byte_size = buffer_attributes->byte_size;
  return nullptr;
}

// ---- Logging and traces ----

namespace operon {
bool VerboseEnabled();
}

EXPORT bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level) {
  return level == TRITONSERVER_LOG_VERBOSE ? operon::VerboseEnabled() : true;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char* filename, const int line,
                                                   const char* msg) {
  if (level == TRITONSERVER_LOG_VERBOSE && !operon::VerboseEnabled()) return nullptr;
  operon::Log(level, filename, line, msg ? msg : "");
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_InferenceTraceReportActivity(TRITONSERVER_InferenceTrace*, uint64_t,
                                                                     const char*) {
  return nullptr;
}

// Triton's server-wide metrics object is for in-process clients; backends
// never get one from Operon.
EXPORT TRITONSERVER_Error* TRITONSERVER_MetricsDelete(TRITONSERVER_Metrics*) { return nullptr; }
EXPORT TRITONSERVER_Error* TRITONSERVER_MetricsFormatted(TRITONSERVER_Metrics*, TRITONSERVER_MetricFormat,
                                                         const char**, size_t*) {
  return operon::Unsupported("TRITONSERVER_MetricsFormatted", "Operon exports metrics on its metrics port");
}
