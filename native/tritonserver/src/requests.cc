// Requests, inputs, responses, response factories and statistics: what a
// backend sees during TRITONBACKEND_ModelInstanceExecute, and
// OperonHostExecute, which builds the requests from the host's structs and
// routes responses, releases and statistics to the instance's callbacks.
#include <cstdlib>
#include <cstring>

#include "internal.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

using operon::HostError;
using operon::MakeError;
using operon::NullArgument;

#define REQUIRE(ptr, fn) \
  if ((ptr) == nullptr) return NullArgument(fn, #ptr)

namespace {

const OperonHostCallbacks& Callbacks(const RequestContext& c) { return c.instance->callbacks; }

// Host parameters (copied) into Triton parameters.
void CopyParameters(const OperonHostParameter* in, uint32_t count, std::vector<TRITONSERVER_Parameter>* out) {
  for (uint32_t i = 0; i < count; ++i) {
    const OperonHostParameter& p = in[i];
    TRITONSERVER_Parameter q;
    q.name = p.name ? p.name : "";
    q.type = static_cast<TRITONSERVER_ParameterType>(p.type);
    q.string_value = p.string_value ? p.string_value : "";
    q.int_value = p.int_value;
    q.bool_value = p.bool_value != 0;
    q.double_value = p.double_value;
    if (p.type == OPERON_HOST_PARAMETER_BYTES && p.bytes != nullptr)
      q.owned_bytes.assign(static_cast<const char*>(p.bytes), p.byte_size);
    q.byte_size = p.byte_size;
    out->push_back(std::move(q));
  }
  for (auto& q : *out)
    if (q.type == TRITONSERVER_PARAMETER_BYTES) q.bytes = q.owned_bytes.data();
}

void ToHostParameters(const std::vector<TRITONSERVER_Parameter>& in, std::vector<OperonHostParameter>* out) {
  for (const auto& p : in) {
    OperonHostParameter h{};
    h.name = p.name.c_str();
    h.type = p.type;
    h.string_value = p.string_value.c_str();
    h.int_value = p.int_value;
    h.bool_value = p.bool_value ? 1 : 0;
    h.double_value = p.double_value;
    h.bytes = p.bytes;
    h.byte_size = p.byte_size;
    out->push_back(h);
  }
}

// Gives back, unsent, the memory of a response's outputs.
void DropOutputs(TRITONBACKEND_Response* r) {
  const OperonHostCallbacks& cb = Callbacks(*r->context);
  for (auto& o : r->outputs) {
    if (!o->has_buffer) continue;
    if (o->library_owned)
      std::free(o->base);
    else if (cb.release_allocation != nullptr)
      cb.release_allocation(cb.user, r->context->user, o->base, o->allocation);
  }
}

// Delivers one response (or flags only, when `r` is NULL) to the host.
void Deliver(const RequestContext& c, TRITONBACKEND_Response* r, uint32_t flags, TRITONSERVER_Error* error) {
  const OperonHostCallbacks& cb = Callbacks(c);
  std::vector<OperonHostOutput> outputs;
  std::vector<OperonHostParameter> parameters;
  if (r != nullptr) {
    for (auto& o : r->outputs) {
      OperonHostOutput h{};
      h.name = o->name.c_str();
      h.datatype = TRITONSERVER_DataTypeString(o->datatype);
      h.shape = o->shape.data();
      h.dims_count = static_cast<uint32_t>(o->shape.size());
      h.base = o->base;
      h.byte_size = o->has_buffer ? o->byte_size : 0;
      h.memory_type = o->attributes.memory_type;
      h.memory_type_id = o->attributes.memory_type_id;
      h.allocation = o->allocation;
      outputs.push_back(h);
    }
    ToHostParameters(r->parameters, &parameters);
  }
  OperonHostError host_error{0, nullptr};
  if (error != nullptr) {
    host_error.code = error->code;
    host_error.message = const_cast<char*>(error->message.c_str());
  }
  OperonHostResponse response{};
  response.outputs = outputs.data();
  response.output_count = static_cast<uint32_t>(outputs.size());
  response.parameters = parameters.data();
  response.parameter_count = static_cast<uint32_t>(parameters.size());
  response.error = error != nullptr ? &host_error : nullptr;
  response.flags = flags;
  response.empty = r == nullptr ? 1 : 0;
  c.instance->model->response_count += r != nullptr ? 1 : 0;
  if (cb.response != nullptr) cb.response(cb.user, c.user, &response);
  if (r != nullptr)
    for (auto& o : r->outputs)
      if (o->has_buffer && o->library_owned) std::free(o->base);
}

bool Cancelled(const RequestContext& c) {
  const OperonHostCallbacks& cb = Callbacks(c);
  return cb.is_cancelled != nullptr && cb.is_cancelled(cb.user, c.user) != 0;
}

void Report(TRITONBACKEND_ModelInstance* instance, const OperonHostStatistics& s) {
  const OperonHostCallbacks& cb = instance->callbacks;
  if (cb.statistics != nullptr) cb.statistics(cb.user, &s);
}

}  // namespace

void BatchUnref(Batch* batch) {
  if (batch->references.fetch_sub(1) == 1) delete batch;
}

// ---- Host API: execute ----

// A device-memory input goes only to a KIND_GPU instance on its GPU, and
// must be a region of that GPU's pool: a backend would otherwise read a
// device address as host memory, or another GPU's memory, and crash or
// compute garbage far from the cause.
static OperonHostError* CheckGpuInput(const TRITONBACKEND_ModelInstance* inst, const OperonHostInput& in,
                               const OperonHostBuffer& buffer) {
  if (buffer.memory_type != OPERON_HOST_MEMORY_GPU) return nullptr;
  const std::string what = "OperonHostExecute: input '" + std::string(in.name) + "' is in GPU " +
                           std::to_string(buffer.memory_type_id) + "'s memory, but instance '" + inst->name + "' ";
  if (inst->kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, what + "is KIND_" +
                                                        TRITONSERVER_InstanceGroupKindString(inst->kind) +
                                                        ": copy it to host memory first");
  if (buffer.memory_type_id != inst->device_id)
    return HostError(OPERON_HOST_ERROR_INVALID_ARG,
                     what + "runs on GPU " + std::to_string(inst->device_id) + ": copy it to host memory first");
  if (!operon::DeviceRegionHolds(inst->device_id, buffer.base, buffer.byte_size))
    return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostExecute: input '" + std::string(in.name) + "': " +
                                                        std::to_string(buffer.byte_size) +
                                                        " bytes of GPU memory that are not inside one region of GPU " +
                                                        std::to_string(inst->device_id) + "'s pool");
  return nullptr;
}

EXPORT OperonHostError* OperonHostExecute(OperonHostInstance* instance, const OperonHostRequest* requests,
                                          uint32_t count) {
  if (instance == nullptr) return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostExecute: instance is NULL");
  if (count == 0) return nullptr;
  if (requests == nullptr) return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostExecute: requests is NULL");
  TRITONBACKEND_ModelInstance* inst = instance->instance;
  TRITONBACKEND_Model* model = inst->model;
  std::vector<std::string> default_outputs;
  {
    std::lock_guard<std::mutex> lock(model->mutex);
    default_outputs = model->output_names;
  }
  // Validate everything before the backend sees anything.
  for (uint32_t i = 0; i < count; ++i) {
    const OperonHostRequest& h = requests[i];
    for (uint32_t k = 0; k < h.input_count; ++k) {
      const OperonHostInput& in = h.inputs[k];
      if (in.name == nullptr || TRITONSERVER_StringToDataType(in.datatype) == TRITONSERVER_TYPE_INVALID)
        return HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostExecute: request " + std::to_string(i) + " input " +
                                                            std::to_string(k) + " has no name or an unknown datatype '" +
                                                            (in.datatype ? in.datatype : "") + "'");
      for (uint32_t b = 0; b < in.buffer_count; ++b)
        if (OperonHostError* e = CheckGpuInput(inst, in, in.buffers[b])) return e;
    }
  }
  auto* batch = new Batch();
  batch->count = count;
  batch->requests.reset(new TRITONBACKEND_Request[count]);
  batch->references = static_cast<int>(count) + 1;  // + this call
  std::vector<TRITONBACKEND_Request*> pointers(count);
  for (uint32_t i = 0; i < count; ++i) {
    const OperonHostRequest& h = requests[i];
    TRITONBACKEND_Request& r = batch->requests[i];
    r.batch = batch;
    r.context = std::make_shared<RequestContext>(RequestContext{inst, h.user});
    r.id = h.id ? h.id : "";
    r.correlation_id = h.correlation_id;
    r.correlation_is_string = h.correlation_id_string != nullptr;
    if (r.correlation_is_string) r.correlation_id_string = h.correlation_id_string;
    r.flags = h.flags;
    r.inputs.resize(h.input_count);
    for (uint32_t k = 0; k < h.input_count; ++k) {
      const OperonHostInput& in = h.inputs[k];
      TRITONBACKEND_Input& t = r.inputs[k];
      t.name = in.name;
      t.datatype = TRITONSERVER_StringToDataType(in.datatype);
      t.shape.assign(in.shape, in.shape + in.dims_count);
      t.buffers.assign(in.buffers, in.buffers + in.buffer_count);
      for (const auto& b : t.buffers) {
        t.byte_size += b.byte_size;
        TRITONSERVER_BufferAttributes a;
        a.memory_type = static_cast<TRITONSERVER_MemoryType>(b.memory_type);
        a.memory_type_id = b.memory_type_id;
        a.byte_size = b.byte_size;
        t.attributes.push_back(a);
      }
    }
    if (h.requested_output_count == 0) {
      r.requested_outputs = default_outputs;
    } else {
      for (uint32_t k = 0; k < h.requested_output_count; ++k)
        if (h.requested_outputs[k] != nullptr) r.requested_outputs.emplace_back(h.requested_outputs[k]);
    }
    CopyParameters(h.parameters, h.parameter_count, &r.parameters);
    pointers[i] = &r;
  }
  TRITONSERVER_Error* err = model->backend->execute(inst, pointers.data(), count);
  OperonHostError* result = nullptr;
  if (err != nullptr) {
    // Triton's rule: a failed Execute did not take the requests; the server
    // answers and releases them.
    for (uint32_t i = 0; i < count; ++i) {
      TRITONBACKEND_Request& r = batch->requests[i];
      if (r.released.load()) continue;
      Deliver(*r.context, nullptr, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err);
      TRITONBACKEND_RequestRelease(&r, TRITONSERVER_REQUEST_RELEASE_ALL);
    }
    result = operon::ToHostError(err);
  }
  BatchUnref(batch);
  return result;
}

// ---- Requests ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestId(TRITONBACKEND_Request* request, const char** id) {
  REQUIRE(request, "TRITONBACKEND_RequestId");
  REQUIRE(id, "TRITONBACKEND_RequestId");
  *id = request->id.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestIsCancelled(TRITONBACKEND_Request* request, bool* is_cancelled) {
  REQUIRE(request, "TRITONBACKEND_RequestIsCancelled");
  REQUIRE(is_cancelled, "TRITONBACKEND_RequestIsCancelled");
  *is_cancelled = Cancelled(*request->context);
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationId(TRITONBACKEND_Request* request, uint64_t* id) {
  REQUIRE(request, "TRITONBACKEND_RequestCorrelationId");
  REQUIRE(id, "TRITONBACKEND_RequestCorrelationId");
  if (request->correlation_is_string)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     "TRITONBACKEND_RequestCorrelationId: the correlation id of request '" + request->id +
                         "' is a string; use TRITONBACKEND_RequestCorrelationIdString");
  *id = request->correlation_id;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationIdString(TRITONBACKEND_Request* request, const char** id) {
  REQUIRE(request, "TRITONBACKEND_RequestCorrelationIdString");
  REQUIRE(id, "TRITONBACKEND_RequestCorrelationIdString");
  if (!request->correlation_is_string)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     "TRITONBACKEND_RequestCorrelationIdString: the correlation id of request '" + request->id +
                         "' is an integer; use TRITONBACKEND_RequestCorrelationId");
  *id = request->correlation_id_string.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_InferenceRequestTimeoutMicroseconds(TRITONBACKEND_Request* request,
                                                                             uint64_t* timeout) {
  REQUIRE(request, "TRITONBACKEND_InferenceRequestTimeoutMicroseconds");
  REQUIRE(timeout, "TRITONBACKEND_InferenceRequestTimeoutMicroseconds");
  *timeout = 0;  // no timeout: Operon's gateway enforces request deadlines itself
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestFlags(TRITONBACKEND_Request* request, uint32_t* flags) {
  REQUIRE(request, "TRITONBACKEND_RequestFlags");
  REQUIRE(flags, "TRITONBACKEND_RequestFlags");
  *flags = request->flags;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestParameterCount(TRITONBACKEND_Request* request, uint32_t* count) {
  REQUIRE(request, "TRITONBACKEND_RequestParameterCount");
  REQUIRE(count, "TRITONBACKEND_RequestParameterCount");
  *count = static_cast<uint32_t>(request->parameters.size());
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestParameter(TRITONBACKEND_Request* request, const uint32_t index,
                                                          const char** key, TRITONSERVER_ParameterType* type,
                                                          const void** vvalue) {
  REQUIRE(request, "TRITONBACKEND_RequestParameter");
  if (index >= request->parameters.size())
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_RequestParameter: index " + std::to_string(index) +
                                                         " out of range (the request has " +
                                                         std::to_string(request->parameters.size()) + " parameters)");
  TRITONSERVER_Parameter& p = request->parameters[index];
  if (key) *key = p.name.c_str();
  if (type) *type = p.type;
  if (vvalue) {
    switch (p.type) {
      case TRITONSERVER_PARAMETER_STRING: *vvalue = p.string_value.c_str(); break;
      case TRITONSERVER_PARAMETER_INT: *vvalue = &p.int_value; break;
      case TRITONSERVER_PARAMETER_BOOL: *vvalue = &p.bool_value; break;
      case TRITONSERVER_PARAMETER_DOUBLE: *vvalue = &p.double_value; break;
      default: *vvalue = p.bytes; break;
    }
  }
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request* request, uint32_t* count) {
  REQUIRE(request, "TRITONBACKEND_RequestInputCount");
  REQUIRE(count, "TRITONBACKEND_RequestInputCount");
  *count = static_cast<uint32_t>(request->inputs.size());
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestInputName(TRITONBACKEND_Request* request, const uint32_t index,
                                                          const char** input_name) {
  REQUIRE(request, "TRITONBACKEND_RequestInputName");
  REQUIRE(input_name, "TRITONBACKEND_RequestInputName");
  if (index >= request->inputs.size())
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_RequestInputName: index " + std::to_string(index) +
                                                         " out of range (the request has " +
                                                         std::to_string(request->inputs.size()) + " inputs)");
  *input_name = request->inputs[index].name.c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                                      TRITONBACKEND_Input** input) {
  REQUIRE(request, "TRITONBACKEND_RequestInput");
  REQUIRE(name, "TRITONBACKEND_RequestInput");
  REQUIRE(input, "TRITONBACKEND_RequestInput");
  for (auto& in : request->inputs) {
    if (in.name == name) {
      *input = &in;
      return nullptr;
    }
  }
  return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                   "TRITONBACKEND_RequestInput: request '" + request->id + "' has no input named '" + name + "'");
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestInputByIndex(TRITONBACKEND_Request* request, const uint32_t index,
                                                             TRITONBACKEND_Input** input) {
  REQUIRE(request, "TRITONBACKEND_RequestInputByIndex");
  REQUIRE(input, "TRITONBACKEND_RequestInputByIndex");
  if (index >= request->inputs.size())
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_RequestInputByIndex: index " +
                                                         std::to_string(index) + " out of range (the request has " +
                                                         std::to_string(request->inputs.size()) + " inputs)");
  *input = &request->inputs[index];
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* count) {
  REQUIRE(request, "TRITONBACKEND_RequestOutputCount");
  REQUIRE(count, "TRITONBACKEND_RequestOutputCount");
  *count = static_cast<uint32_t>(request->requested_outputs.size());
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request* request, const uint32_t index,
                                                           const char** output_name) {
  REQUIRE(request, "TRITONBACKEND_RequestOutputName");
  REQUIRE(output_name, "TRITONBACKEND_RequestOutputName");
  if (index >= request->requested_outputs.size())
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_RequestOutputName: index " +
                                                         std::to_string(index) + " out of range (the request asks for " +
                                                         std::to_string(request->requested_outputs.size()) + " outputs)");
  *output_name = request->requested_outputs[index].c_str();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestOutputBufferProperties(TRITONBACKEND_Request* request,
                                                                       const char* name, size_t* byte_size,
                                                                       TRITONSERVER_MemoryType* memory_type,
                                                                       int64_t* memory_type_id) {
  REQUIRE(request, "TRITONBACKEND_RequestOutputBufferProperties");
  // The host allocates outputs on demand and has no size hint to give.
  if (byte_size) *byte_size = 0;
  if (memory_type) *memory_type = TRITONSERVER_MEMORY_CPU;
  if (memory_type_id) *memory_type_id = 0;
  (void)name;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t release_flags) {
  REQUIRE(request, "TRITONBACKEND_RequestRelease");
  if (request->released.exchange(true))
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     "TRITONBACKEND_RequestRelease: request '" + request->id + "' was already released");
  const OperonHostCallbacks& cb = Callbacks(*request->context);
  if (cb.released != nullptr) cb.released(cb.user, request->context->user, release_flags);
  BatchUnref(request->batch);
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_RequestTrace(TRITONBACKEND_Request* request,
                                                      TRITONSERVER_InferenceTrace** trace) {
  REQUIRE(request, "TRITONBACKEND_RequestTrace");
  REQUIRE(trace, "TRITONBACKEND_RequestTrace");
  *trace = nullptr;  // Operon does not trace inside backends
  return nullptr;
}

// ---- Inputs ----

namespace {
TRITONSERVER_Error* Properties(const char* fn, TRITONBACKEND_Input* input, const char** name,
                               TRITONSERVER_DataType* datatype, const int64_t** shape, uint32_t* dims_count,
                               uint64_t* byte_size, uint32_t* buffer_count) {
  REQUIRE(input, fn);
  if (name) *name = input->name.c_str();
  if (datatype) *datatype = input->datatype;
  if (shape) *shape = input->shape.data();
  if (dims_count) *dims_count = static_cast<uint32_t>(input->shape.size());
  if (byte_size) *byte_size = input->byte_size;
  if (buffer_count) *buffer_count = static_cast<uint32_t>(input->buffers.size());
  return nullptr;
}

TRITONSERVER_Error* Buffer(const char* fn, TRITONBACKEND_Input* input, uint32_t index, const void** buffer,
                           uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                           int64_t* memory_type_id) {
  REQUIRE(input, fn);
  REQUIRE(buffer, fn);
  if (index >= input->buffers.size())
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": buffer index " + std::to_string(index) +
                                                         " out of range (input '" + input->name + "' has " +
                                                         std::to_string(input->buffers.size()) + " buffers)");
  const OperonHostBuffer& b = input->buffers[index];
  // The caller's preferred memory type is a hint; the buffer stays where the
  // host put it (host memory) and the answer says so, as Triton allows.
  *buffer = b.base;
  if (buffer_byte_size) *buffer_byte_size = b.byte_size;
  if (memory_type) *memory_type = static_cast<TRITONSERVER_MemoryType>(b.memory_type);
  if (memory_type_id) *memory_type_id = b.memory_type_id;
  return nullptr;
}
}  // namespace

EXPORT TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                         TRITONSERVER_DataType* datatype, const int64_t** shape,
                                                         uint32_t* dims_count, uint64_t* byte_size,
                                                         uint32_t* buffer_count) {
  return Properties("TRITONBACKEND_InputProperties", input, name, datatype, shape, dims_count, byte_size,
                    buffer_count);
}

// Operon has one host policy per instance, so the per-policy view of an
// input is the input itself.
EXPORT TRITONSERVER_Error* TRITONBACKEND_InputPropertiesForHostPolicy(TRITONBACKEND_Input* input, const char*,
                                                                      const char** name,
                                                                      TRITONSERVER_DataType* datatype,
                                                                      const int64_t** shape, uint32_t* dims_count,
                                                                      uint64_t* byte_size, uint32_t* buffer_count) {
  return Properties("TRITONBACKEND_InputPropertiesForHostPolicy", input, name, datatype, shape, dims_count,
                    byte_size, buffer_count);
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, const uint32_t index,
                                                     const void** buffer, uint64_t* buffer_byte_size,
                                                     TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  return Buffer("TRITONBACKEND_InputBuffer", input, index, buffer, buffer_byte_size, memory_type, memory_type_id);
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_InputBufferForHostPolicy(TRITONBACKEND_Input* input, const char*,
                                                                  const uint32_t index, const void** buffer,
                                                                  uint64_t* buffer_byte_size,
                                                                  TRITONSERVER_MemoryType* memory_type,
                                                                  int64_t* memory_type_id) {
  return Buffer("TRITONBACKEND_InputBufferForHostPolicy", input, index, buffer, buffer_byte_size, memory_type,
                memory_type_id);
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_InputBufferAttributes(TRITONBACKEND_Input* input, const uint32_t index,
                                                               const void** buffer,
                                                               TRITONSERVER_BufferAttributes** buffer_attributes) {
  const char* fn = "TRITONBACKEND_InputBufferAttributes";
  REQUIRE(input, fn);
  REQUIRE(buffer, fn);
  REQUIRE(buffer_attributes, fn);
  if (index >= input->buffers.size())
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": buffer index " + std::to_string(index) +
                                                         " out of range (input '" + input->name + "' has " +
                                                         std::to_string(input->buffers.size()) + " buffers)");
  *buffer = input->buffers[index].base;
  *buffer_attributes = &input->attributes[index];
  return nullptr;
}

// ---- Response factories ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryNew(TRITONBACKEND_ResponseFactory** factory,
                                                            TRITONBACKEND_Request* request) {
  REQUIRE(factory, "TRITONBACKEND_ResponseFactoryNew");
  REQUIRE(request, "TRITONBACKEND_ResponseFactoryNew");
  *factory = new TRITONBACKEND_ResponseFactory{request->context};
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryDelete(TRITONBACKEND_ResponseFactory* factory) {
  delete factory;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseFactorySendFlags(TRITONBACKEND_ResponseFactory* factory,
                                                                  const uint32_t send_flags) {
  REQUIRE(factory, "TRITONBACKEND_ResponseFactorySendFlags");
  Deliver(*factory->context, nullptr, send_flags, nullptr);
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryIsCancelled(TRITONBACKEND_ResponseFactory* factory,
                                                                    bool* is_cancelled) {
  REQUIRE(factory, "TRITONBACKEND_ResponseFactoryIsCancelled");
  REQUIRE(is_cancelled, "TRITONBACKEND_ResponseFactoryIsCancelled");
  *is_cancelled = Cancelled(*factory->context);
  return nullptr;
}

// ---- Responses ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response,
                                                     TRITONBACKEND_Request* request) {
  REQUIRE(response, "TRITONBACKEND_ResponseNew");
  REQUIRE(request, "TRITONBACKEND_ResponseNew");
  *response = new TRITONBACKEND_Response{request->context, {}, {}};
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseNewFromFactory(TRITONBACKEND_Response** response,
                                                                TRITONBACKEND_ResponseFactory* factory) {
  REQUIRE(response, "TRITONBACKEND_ResponseNewFromFactory");
  REQUIRE(factory, "TRITONBACKEND_ResponseNewFromFactory");
  *response = new TRITONBACKEND_Response{factory->context, {}, {}};
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response* response) {
  if (response == nullptr) return nullptr;
  DropOutputs(response);
  delete response;
  return nullptr;
}

namespace {
TRITONSERVER_Error* SetParameter(const char* fn, TRITONBACKEND_Response* response, const char* name,
                                 TRITONSERVER_Parameter p) {
  REQUIRE(response, fn);
  REQUIRE(name, fn);
  p.name = name;
  response->parameters.push_back(std::move(p));
  return nullptr;
}
}  // namespace

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseSetStringParameter(TRITONBACKEND_Response* response,
                                                                    const char* name, const char* value) {
  TRITONSERVER_Parameter p;
  p.type = TRITONSERVER_PARAMETER_STRING;
  p.string_value = value ? value : "";
  return SetParameter("TRITONBACKEND_ResponseSetStringParameter", response, name, std::move(p));
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseSetIntParameter(TRITONBACKEND_Response* response, const char* name,
                                                                 const int64_t value) {
  TRITONSERVER_Parameter p;
  p.type = TRITONSERVER_PARAMETER_INT;
  p.int_value = value;
  return SetParameter("TRITONBACKEND_ResponseSetIntParameter", response, name, std::move(p));
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseSetBoolParameter(TRITONBACKEND_Response* response, const char* name,
                                                                  const bool value) {
  TRITONSERVER_Parameter p;
  p.type = TRITONSERVER_PARAMETER_BOOL;
  p.bool_value = value;
  return SetParameter("TRITONBACKEND_ResponseSetBoolParameter", response, name, std::move(p));
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseSetDoubleParameter(TRITONBACKEND_Response* response,
                                                                    const char* name, const double value) {
  TRITONSERVER_Parameter p;
  p.type = TRITONSERVER_PARAMETER_DOUBLE;
  p.double_value = value;
  return SetParameter("TRITONBACKEND_ResponseSetDoubleParameter", response, name, std::move(p));
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response,
                                                        TRITONBACKEND_Output** output, const char* name,
                                                        const TRITONSERVER_DataType datatype, const int64_t* shape,
                                                        const uint32_t dims_count) {
  const char* fn = "TRITONBACKEND_ResponseOutput";
  REQUIRE(response, fn);
  REQUIRE(output, fn);
  REQUIRE(name, fn);
  if (dims_count > 0 && shape == nullptr) return NullArgument(fn, "shape");
  if (TRITONSERVER_DataTypeByteSize(datatype) == 0 && datatype != TRITONSERVER_TYPE_BYTES)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": output '" + name +
                                                         "' has an invalid datatype " + std::to_string(datatype));
  for (const auto& o : response->outputs)
    if (o->name == name)
      return MakeError(TRITONSERVER_ERROR_ALREADY_EXISTS,
                       std::string(fn) + ": the response already has an output named '" + name + "'");
  auto o = std::make_unique<TRITONBACKEND_Output>();
  o->context = response->context.get();
  o->name = name;
  o->datatype = datatype;
  o->shape.assign(shape, shape + dims_count);
  *output = o.get();
  response->outputs.push_back(std::move(o));
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, const uint32_t send_flags,
                                                      TRITONSERVER_Error* error) {
  if (response == nullptr) {
    delete error;
    return NullArgument("TRITONBACKEND_ResponseSend", "response");
  }
  Deliver(*response->context, response, send_flags, error);
  delete response;
  delete error;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutputByName(TRITONBACKEND_Response* response,
                                                                       const char* name,
                                                                       TRITONSERVER_DataType* datatype,
                                                                       const int64_t** shape, uint64_t* dim_count) {
  REQUIRE(response, "TRITONBACKEND_InferenceResponseOutputByName");
  REQUIRE(name, "TRITONBACKEND_InferenceResponseOutputByName");
  for (const auto& o : response->outputs) {
    if (o->name != name) continue;
    if (datatype) *datatype = o->datatype;
    if (shape) *shape = o->shape.data();
    if (dim_count) *dim_count = o->shape.size();
    return nullptr;
  }
  return MakeError(TRITONSERVER_ERROR_NOT_FOUND,
                   std::string("TRITONBACKEND_InferenceResponseOutputByName: the response has no output named '") +
                       name + "'");
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutput(TRITONBACKEND_Response* response,
                                                                 const uint32_t index, const char** name,
                                                                 TRITONSERVER_DataType* datatype,
                                                                 const int64_t** shape, uint64_t* dim_count) {
  REQUIRE(response, "TRITONBACKEND_InferenceResponseOutput");
  if (index >= response->outputs.size())
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_InferenceResponseOutput: index " +
                                                         std::to_string(index) + " out of range (the response has " +
                                                         std::to_string(response->outputs.size()) + " outputs)");
  const auto& o = response->outputs[index];
  if (name) *name = o->name.c_str();
  if (datatype) *datatype = o->datatype;
  if (shape) *shape = o->shape.data();
  if (dim_count) *dim_count = o->shape.size();
  return nullptr;
}

// ---- Output buffers ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer,
                                                      const uint64_t buffer_byte_size,
                                                      TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  const char* fn = "TRITONBACKEND_OutputBuffer";
  REQUIRE(output, fn);
  REQUIRE(buffer, fn);
  REQUIRE(memory_type, fn);
  REQUIRE(memory_type_id, fn);
  if (output->has_buffer)
    return MakeError(TRITONSERVER_ERROR_ALREADY_EXISTS,
                     std::string(fn) + ": output '" + output->name + "' already has a buffer");
  // GPU is only a preference in Triton's contract: the answer may be another
  // memory type. The host decides (it keeps an output on the device only when
  // the next step of the operator runs on the same GPU).
  uint32_t preferred = *memory_type;
  const OperonHostCallbacks& cb = output->context->instance->callbacks;
  void* base = nullptr;
  uint32_t got_type = OPERON_HOST_MEMORY_CPU;
  int64_t got_id = 0;
  void* allocation = nullptr;
  if (cb.allocate != nullptr) {
    OperonHostError* e = cb.allocate(cb.user, output->context->user, output->name.c_str(),
                                     TRITONSERVER_DataTypeString(output->datatype), output->shape.data(),
                                     static_cast<uint32_t>(output->shape.size()), buffer_byte_size, preferred,
                                     *memory_type_id, &base, &got_type, &got_id, &allocation);
    if (e != nullptr) {
      TRITONSERVER_Error* err = MakeError(static_cast<TRITONSERVER_Error_Code>(e->code),
                                          std::string(fn) + ": cannot allocate " + std::to_string(buffer_byte_size) +
                                              " bytes for output '" + output->name + "': " + (e->message ? e->message : ""));
      OperonHostErrorDelete(e);
      return err;
    }
    if (got_type == OPERON_HOST_MEMORY_GPU &&
        (preferred != OPERON_HOST_MEMORY_GPU || got_id != *memory_type_id ||
         !operon::DeviceRegionHolds(static_cast<int32_t>(got_id), base, buffer_byte_size))) {
      // The memory is the host's, not the backend's: hand it back rather than leak it.
      if (cb.release_allocation != nullptr) cb.release_allocation(cb.user, output->context->user, base, allocation);
      return MakeError(TRITONSERVER_ERROR_INTERNAL,
                       std::string(fn) + ": the host answered with GPU " + std::to_string(got_id) +
                           " memory for output '" + output->name + "', which " +
                           (preferred != OPERON_HOST_MEMORY_GPU
                                ? std::string("the backend did not ask for")
                                : got_id != *memory_type_id
                                      ? "is not the GPU the backend asked for (" + std::to_string(*memory_type_id) + ")"
                                      : std::string("is not a region of that GPU's pool")));
    }
    if (base == nullptr && buffer_byte_size > 0)
      return MakeError(TRITONSERVER_ERROR_INTERNAL, std::string(fn) + ": the host gave no memory for output '" +
                                                        output->name + "'");
  } else {
    base = std::malloc(buffer_byte_size == 0 ? 1 : buffer_byte_size);
    if (base == nullptr)
      return MakeError(TRITONSERVER_ERROR_UNAVAILABLE,
                       std::string(fn) + ": out of memory for " + std::to_string(buffer_byte_size) + " bytes");
    output->library_owned = true;
  }
  output->base = base;
  output->byte_size = buffer_byte_size;
  output->allocation = allocation;
  output->has_buffer = true;
  output->attributes.memory_type = static_cast<TRITONSERVER_MemoryType>(got_type);
  output->attributes.memory_type_id = got_id;
  output->attributes.byte_size = buffer_byte_size;
  *buffer = base;
  *memory_type = output->attributes.memory_type;
  *memory_type_id = got_id;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_OutputBufferAttributes(TRITONBACKEND_Output* output,
                                                                TRITONSERVER_BufferAttributes** buffer_attributes) {
  REQUIRE(output, "TRITONBACKEND_OutputBufferAttributes");
  REQUIRE(buffer_attributes, "TRITONBACKEND_OutputBufferAttributes");
  if (!output->has_buffer)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONBACKEND_OutputBufferAttributes: output '" + output->name +
                                                         "' has no buffer yet (call TRITONBACKEND_OutputBuffer first)");
  *buffer_attributes = &output->attributes;
  return nullptr;
}

// ---- Implicit state: needs Triton's sequence batcher, which Operon lacks ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_StateNew(TRITONBACKEND_State**, TRITONBACKEND_Request*, const char*,
                                                  const TRITONSERVER_DataType, const int64_t*, const uint32_t) {
  return operon::Unsupported("TRITONBACKEND_StateNew", "implicit sequence state needs Triton's sequence batcher");
}
EXPORT TRITONSERVER_Error* TRITONBACKEND_StateUpdate(TRITONBACKEND_State*) {
  return operon::Unsupported("TRITONBACKEND_StateUpdate", "implicit sequence state needs Triton's sequence batcher");
}
EXPORT TRITONSERVER_Error* TRITONBACKEND_StateBuffer(TRITONBACKEND_State*, void**, const uint64_t,
                                                     TRITONSERVER_MemoryType*, int64_t*) {
  return operon::Unsupported("TRITONBACKEND_StateBuffer", "implicit sequence state needs Triton's sequence batcher");
}
EXPORT TRITONSERVER_Error* TRITONBACKEND_StateBufferAttributes(TRITONBACKEND_State*,
                                                               TRITONSERVER_BufferAttributes**) {
  return operon::Unsupported("TRITONBACKEND_StateBufferAttributes",
                             "implicit sequence state needs Triton's sequence batcher");
}

// ---- Statistics ----

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, const bool success,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns, const uint64_t compute_end_ns,
    const uint64_t exec_end_ns) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceReportStatistics");
  REQUIRE(request, "TRITONBACKEND_ModelInstanceReportStatistics");
  (success ? instance->model->success_count : instance->model->failure_count) += 1;
  OperonHostStatistics s{};
  s.kind = OPERON_HOST_STATS_REQUEST;
  s.request_user = request->context->user;
  s.success = success ? 1 : 0;
  s.exec_start_ns = exec_start_ns;
  s.compute_start_ns = compute_start_ns;
  s.compute_end_ns = compute_end_ns;
  s.exec_end_ns = exec_end_ns;
  Report(instance, s);
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, const uint64_t batch_size, const uint64_t exec_start_ns,
    const uint64_t compute_start_ns, const uint64_t compute_end_ns, const uint64_t exec_end_ns) {
  REQUIRE(instance, "TRITONBACKEND_ModelInstanceReportBatchStatistics");
  instance->model->execution_count += 1;
  instance->model->inference_count += batch_size;
  if (compute_end_ns > compute_start_ns) instance->model->compute_infer_ns += compute_end_ns - compute_start_ns;
  OperonHostStatistics s{};
  s.kind = OPERON_HOST_STATS_BATCH;
  s.success = 1;
  s.batch_size = batch_size;
  s.exec_start_ns = exec_start_ns;
  s.compute_start_ns = compute_start_ns;
  s.compute_end_ns = compute_end_ns;
  s.exec_end_ns = exec_end_ns;
  Report(instance, s);
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsNew(
    TRITONBACKEND_ModelInstanceResponseStatistics** response_statistics) {
  REQUIRE(response_statistics, "TRITONBACKEND_ModelInstanceResponseStatisticsNew");
  *response_statistics = new TRITONBACKEND_ModelInstanceResponseStatistics();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsDelete(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics) {
  delete response_statistics;
  return nullptr;
}

#define RESPONSE_STAT_SETTER(Suffix, field, Type)                                                   \
  EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSet##Suffix(            \
      TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, Type value) {           \
    REQUIRE(response_statistics, "TRITONBACKEND_ModelInstanceResponseStatisticsSet" #Suffix);     \
    response_statistics->field = value;                                                            \
    return nullptr;                                                                                \
  }
RESPONSE_STAT_SETTER(ModelInstance, instance, TRITONBACKEND_ModelInstance*)
RESPONSE_STAT_SETTER(ResponseFactory, factory, TRITONBACKEND_ResponseFactory*)
RESPONSE_STAT_SETTER(ResponseStart, response_start, uint64_t)
RESPONSE_STAT_SETTER(ComputeOutputStart, compute_output_start, uint64_t)
RESPONSE_STAT_SETTER(ResponseEnd, response_end, uint64_t)

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetError(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, TRITONSERVER_Error* error) {
  REQUIRE(response_statistics, "TRITONBACKEND_ModelInstanceResponseStatisticsSetError");
  response_statistics->has_error = error != nullptr;  // the error stays the caller's
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportResponseStatistics(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics) {
  const char* fn = "TRITONBACKEND_ModelInstanceReportResponseStatistics";
  REQUIRE(response_statistics, fn);
  if (response_statistics->instance == nullptr)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": no model instance set");
  if (response_statistics->factory == nullptr)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": no response factory set");
  OperonHostStatistics s{};
  s.kind = OPERON_HOST_STATS_RESPONSE;
  s.request_user = response_statistics->factory->context->user;
  s.success = response_statistics->has_error ? 0 : 1;
  s.compute_start_ns = response_statistics->response_start;
  s.compute_end_ns = response_statistics->compute_output_start;
  s.exec_end_ns = response_statistics->response_end;
  Report(response_statistics->instance, s);
  return nullptr;
}
