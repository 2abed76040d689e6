// operon_identity: Operon's test backend, written against Triton's backend
// API only (it loads in Triton too). Every input INPUTn is answered as
// OUTPUTn with the same datatype (BYTES included), shape and bytes.
//
// Model config `parameters` (string values) switch on test behaviours:
//   crash_on_execute  "true": raise SIGSEGV in Execute (fault isolation tests)
//   decoupled_repeat  "N": decoupled model: N responses per request from a
//                     backend thread after Execute returned (each with
//                     parameter "index"), then the FINAL flag alone; stops
//                     early with a CANCELLED error when the request is
//                     cancelled (TRITONBACKEND_ResponseFactoryIsCancelled)
//   repeat_delay_ms   "M": wait M ms before each decoupled response
//   execute_delay_ms  "M": wait M ms in Execute (lets requests batch up)
//   reject_config     any value: ModelInitialize fails with INVALID_ARG
//                     naming that field (a backend's own config validation)
// Every response carries the parameter "batch_requests": how many requests
// the Execute call that produced it saw. The counter metric family
// operon_identity_executed_requests{model=...} counts executed requests, and
// request and batch statistics are reported for every Execute.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend-execute.h"
#include "backend-model-config.h"
#include "json-value.h"
#include "triton/core/tritonbackend.h"

namespace {


TRITONSERVER_MetricFamily* g_family = nullptr;

struct ModelState {
  std::string name;
  bool crash_on_execute = false;
  int decoupled_repeat = 0;
  int repeat_delay_ms = 0;
  int execute_delay_ms = 0;
  bool batching = false;
  TRITONSERVER_Metric* executed = nullptr;
};

// Decoupled senders: joined at finalize (their code lives in this library,
// which is closed after it), and reaped when finished so the list does not
// grow for the instance's lifetime.
struct Sender {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};
struct InstanceState {
  ModelState* model;
  std::mutex mutex;
  std::vector<Sender> senders;
};

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TRITONSERVER_Error* IntParameter(const operon_json::Value& config, const char* key, int* out) {
  const std::string* v = operon_json::ConfigParameter(config, key);
  if (v == nullptr) return nullptr;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < 0 || n > 1000000)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 (std::string("operon_identity: parameter '") + key +
                                  "' must be a non-negative integer, got '" + *v + "'")
                                     .c_str());
  *out = static_cast<int>(n);
  return nullptr;
}

// An input's bytes, gathered from its buffers.
struct Tensor {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  std::vector<char> data;
};

TRITONSERVER_Error* ReadInput(TRITONBACKEND_Input* input, Tensor* t) {
  const char* name;
  const int64_t* shape;
  uint32_t dims, buffers;
  uint64_t size;
  RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, &name, &t->datatype, &shape, &dims, &size, &buffers));
  t->name = name;
  t->shape.assign(shape, shape + dims);
  t->data.resize(size);
  uint64_t offset = 0;
  for (uint32_t b = 0; b < buffers; ++b) {
    const void* base;
    uint64_t bytes;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &base, &bytes, &type, &id));
    if (type == TRITONSERVER_MEMORY_GPU)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, "operon_identity: GPU input buffers are not supported");
    if (offset + bytes > size)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "operon_identity: input buffers exceed the input's byte size");
    if (bytes > 0) std::memcpy(t->data.data() + offset, base, bytes);
    offset += bytes;
  }
  return nullptr;
}

// The request's inputs paired with the outputs it asks for.
TRITONSERVER_Error* ReadRequest(TRITONBACKEND_Request* request, std::vector<Tensor>* outputs) {
  uint32_t count;
  RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &count));
  for (uint32_t i = 0; i < count; ++i) {
    const char* out_name;
    RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(request, i, &out_name));
    std::string name(out_name);
    if (name.compare(0, 6, "OUTPUT") != 0)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   ("operon_identity: output '" + name + "' is not named OUTPUT<n>").c_str());
    std::string input_name = "INPUT" + name.substr(6);
    TRITONBACKEND_Input* input;
    TRITONSERVER_Error* err = TRITONBACKEND_RequestInput(request, input_name.c_str(), &input);
    if (err != nullptr) {
      TRITONSERVER_ErrorDelete(err);
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   ("operon_identity: output '" + name + "' needs input '" + input_name + "', which the request lacks").c_str());
    }
    Tensor t;
    RETURN_IF_ERROR(ReadInput(input, &t));
    t.name = name;
    outputs->push_back(std::move(t));
  }
  return nullptr;
}

TRITONSERVER_Error* FillResponse(TRITONBACKEND_Response* response, const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    TRITONBACKEND_Output* output;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, t.name.c_str(), t.datatype, t.shape.data(),
                                                 static_cast<uint32_t>(t.shape.size())));
    void* buffer;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, t.data.size(), &type, &id));
    if (type == TRITONSERVER_MEMORY_GPU)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, "operon_identity: got a GPU output buffer");
    if (!t.data.empty()) std::memcpy(buffer, t.data.data(), t.data.size());
  }
  return nullptr;
}

void SendError(TRITONBACKEND_Request* request, TRITONSERVER_Error* error) {
  TRITONBACKEND_Response* response;
  TRITONSERVER_Error* e = TRITONBACKEND_ResponseNew(&response, request);
  if (e != nullptr) {
    TRITONSERVER_ErrorDelete(e);
    TRITONSERVER_ErrorDelete(error);
    return;
  }
  TRITONSERVER_Error* s = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
  if (s != nullptr) TRITONSERVER_ErrorDelete(s);
}

void Log(TRITONSERVER_LogLevel level, const std::string& message) {
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, __FILE__, __LINE__, message.c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

// Decoupled: N responses from this thread, then FINAL (or CANCELLED).
void Repeat(TRITONBACKEND_ResponseFactory* factory, std::vector<Tensor> tensors, int count, int delay_ms,
            uint32_t batch_requests) {
  for (int k = 0; k < count; ++k) {
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    bool cancelled = false;
    TRITONSERVER_Error* e = TRITONBACKEND_ResponseFactoryIsCancelled(factory, &cancelled);
    if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    TRITONBACKEND_Response* response;
    e = TRITONBACKEND_ResponseNewFromFactory(&response, factory);
    if (e != nullptr) {
      TRITONSERVER_ErrorDelete(e);
      break;
    }
    if (cancelled) {
      TRITONSERVER_Error* s = TRITONBACKEND_ResponseSend(
          response, TRITONSERVER_RESPONSE_COMPLETE_FINAL,
          TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_CANCELLED,
                                ("operon_identity: request cancelled after " + std::to_string(k) + " of " +
                                 std::to_string(count) + " responses").c_str()));
      if (s != nullptr) TRITONSERVER_ErrorDelete(s);
      TRITONBACKEND_ResponseFactoryDelete(factory);
      return;
    }
    TRITONSERVER_Error* fill = FillResponse(response, tensors);
    if (fill == nullptr) {
      TRITONBACKEND_ResponseSetIntParameter(response, "index", k);
      TRITONBACKEND_ResponseSetIntParameter(response, "batch_requests", batch_requests);
    }
    TRITONSERVER_Error* s = TRITONBACKEND_ResponseSend(response, fill ? TRITONSERVER_RESPONSE_COMPLETE_FINAL : 0, fill);
    if (s != nullptr) TRITONSERVER_ErrorDelete(s);
    if (fill != nullptr) {
      TRITONBACKEND_ResponseFactoryDelete(factory);
      return;
    }
  }
  TRITONSERVER_Error* s = TRITONBACKEND_ResponseFactorySendFlags(factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
  if (s != nullptr) TRITONSERVER_ErrorDelete(s);
  TRITONBACKEND_ResponseFactoryDelete(factory);
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  uint32_t major, minor;
  RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != TRITONBACKEND_API_VERSION_MAJOR || minor < TRITONBACKEND_API_VERSION_MINOR)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 ("operon_identity needs TRITONBACKEND API " + std::to_string(TRITONBACKEND_API_VERSION_MAJOR) +
                                  "." + std::to_string(TRITONBACKEND_API_VERSION_MINOR) + "+, the server has " +
                                  std::to_string(major) + "." + std::to_string(minor)).c_str());
  const char* name;
  RETURN_IF_ERROR(TRITONBACKEND_BackendName(backend, &name));
  RETURN_IF_ERROR(TRITONSERVER_MetricFamilyNew(&g_family, TRITONSERVER_METRIC_KIND_COUNTER,
                                               "operon_identity_executed_requests",
                                               "Requests executed by the operon_identity backend"));
  Log(TRITONSERVER_LOG_INFO, std::string("TRITONBACKEND_Initialize: ") + name);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend*) {
  if (g_family != nullptr) {
    TRITONSERVER_Error* e = TRITONSERVER_MetricFamilyDelete(g_family);
    if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    g_family = nullptr;
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  const char* name;
  RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  operon_json::Value config;
  RETURN_IF_ERROR(operon_backend::ParsedModelConfig(model, "operon_identity", &config));
  TRITONSERVER_Error* err = nullptr;
  if (const std::string* bad = operon_json::ConfigParameter(config, "reject_config"))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 ("operon_identity: model '" + std::string(name) +
                                  "': invalid config field 'parameters.reject_config' (value '" + *bad +
                                  "'): this backend rejects any config that sets it")
                                     .c_str());
  auto state = std::make_unique<ModelState>();
  state->name = name;
  const std::string* crash = operon_json::ConfigParameter(config, "crash_on_execute");
  state->crash_on_execute = crash != nullptr && *crash == "true";
  RETURN_IF_ERROR(IntParameter(config, "decoupled_repeat", &state->decoupled_repeat));
  RETURN_IF_ERROR(IntParameter(config, "repeat_delay_ms", &state->repeat_delay_ms));
  RETURN_IF_ERROR(IntParameter(config, "execute_delay_ms", &state->execute_delay_ms));
  const operon_json::Value* mbs = config.Find("max_batch_size");
  state->batching = mbs != nullptr && mbs->AsInt() > 0;

  // Auto-complete: a config without outputs gets OUTPUTn mirroring INPUTn.
  bool auto_complete = false;
  RETURN_IF_ERROR(TRITONBACKEND_ModelAutoCompleteConfig(model, &auto_complete));
  const operon_json::Value* inputs = config.Find("input");
  const operon_json::Value* declared = config.Find("output");
  bool no_outputs = declared == nullptr || (declared->IsArray() && declared->items.empty());
  if (auto_complete && no_outputs && inputs != nullptr && inputs->IsArray()) {
    operon_json::Value outputs;
    outputs.kind = operon_json::Value::Array;
    for (const auto& in : inputs->items) {
      operon_json::Value out = in;
      for (auto& m : out.members)
        if (m.first == "name" && m.second.IsString() && m.second.text.compare(0, 5, "INPUT") == 0)
          m.second.text = "OUTPUT" + m.second.text.substr(5);
      outputs.items.push_back(out);
    }
    bool replaced = false;
    for (auto& m : config.members)
      if (m.first == "output") {
        m.second = outputs;
        replaced = true;
      }
    if (!replaced) config.members.emplace_back("output", outputs);
    std::string completed;
    operon_json::Write(&completed, config);
    TRITONSERVER_Message* msg;
    RETURN_IF_ERROR(TRITONSERVER_MessageNewFromSerializedJson(&msg, completed.data(), completed.size()));
    err = TRITONBACKEND_ModelSetConfig(model, 1, msg);
    TRITONSERVER_MessageDelete(msg);
    RETURN_IF_ERROR(err);
  }

  TRITONSERVER_Parameter* label = TRITONSERVER_ParameterNew("model", TRITONSERVER_PARAMETER_STRING, name);
  const TRITONSERVER_Parameter* labels[] = {label};
  err = TRITONSERVER_MetricNew(&state->executed, g_family, labels, 1);
  TRITONSERVER_ParameterDelete(label);
  RETURN_IF_ERROR(err);
  RETURN_IF_ERROR(TRITONBACKEND_ModelSetState(model, state.release()));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  ModelState* state = nullptr;
  RETURN_IF_ERROR(operon_backend::ModelStateOf(model, &state));
  if (state->executed != nullptr) TRITONSERVER_MetricDelete(state->executed);
  delete state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  RETURN_IF_ERROR(operon_backend::RefuseGpuInstance(instance, "operon_identity"));
  ModelState* model = nullptr;
  RETURN_IF_ERROR(operon_backend::ModelStateOf(instance, &model));
  auto* state = new InstanceState();
  state->model = model;
  return TRITONBACKEND_ModelInstanceSetState(instance, state);
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  InstanceState* state = nullptr;
  RETURN_IF_ERROR(operon_backend::InstanceStateOf(instance, &state));
  std::vector<Sender> senders;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    senders.swap(state->senders);
  }
  for (auto& s : senders) s.thread.join();
  delete state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, const uint32_t count) {
  InstanceState* state = nullptr;
  RETURN_IF_ERROR(operon_backend::InstanceStateOf(instance, &state));
  ModelState* model = state->model;
  if (model->crash_on_execute) std::raise(SIGSEGV);  // on purpose: the fault tests
  uint64_t exec_start = NowNs();
  if (model->execute_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(model->execute_delay_ms));
  uint64_t batch_size = 0;
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    uint64_t compute_start = NowNs();
    std::vector<Tensor> tensors;
    TRITONSERVER_Error* err = ReadRequest(request, &tensors);
    if (model->batching) {
      uint32_t inputs = 0;
      TRITONBACKEND_RequestInputCount(request, &inputs);
      TRITONBACKEND_Input* first;
      if (inputs > 0 && TRITONBACKEND_RequestInputByIndex(request, 0, &first) == nullptr) {
        const int64_t* shape;
        uint32_t dims;
        if (TRITONBACKEND_InputProperties(first, nullptr, nullptr, &shape, &dims, nullptr, nullptr) == nullptr && dims > 0)
          batch_size += static_cast<uint64_t>(shape[0]);
      }
    } else {
      batch_size += 1;
    }
    bool ok = err == nullptr;
    if (err != nullptr) {
      SendError(request, err);
    } else if (model->decoupled_repeat > 0) {
      TRITONBACKEND_ResponseFactory* factory;
      err = TRITONBACKEND_ResponseFactoryNew(&factory, request);
      if (err != nullptr) {
        SendError(request, err);
        ok = false;
      } else {
        std::lock_guard<std::mutex> lock(state->mutex);
        for (auto it = state->senders.begin(); it != state->senders.end();) {
          if (it->done->load()) {
            it->thread.join();
            it = state->senders.erase(it);
          } else {
            ++it;
          }
        }
        auto done = std::make_shared<std::atomic<bool>>(false);
        state->senders.push_back(Sender{std::thread([factory, tensors = std::move(tensors), repeat = model->decoupled_repeat,
                                                     delay = model->repeat_delay_ms, count, done]() mutable {
                                          Repeat(factory, std::move(tensors), repeat, delay, count);
                                          done->store(true);
                                        }),
                                        done});
      }
    } else {
      TRITONBACKEND_Response* response;
      err = TRITONBACKEND_ResponseNew(&response, request);
      if (err == nullptr) {
        TRITONSERVER_Error* fill = FillResponse(response, tensors);
        if (fill == nullptr) TRITONBACKEND_ResponseSetIntParameter(response, "batch_requests", count);
        ok = fill == nullptr;
        TRITONSERVER_Error* s = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, fill);
        if (s != nullptr) TRITONSERVER_ErrorDelete(s);
      } else {
        SendError(request, err);
        ok = false;
      }
    }
    uint64_t compute_end = NowNs();
    TRITONSERVER_Error* s = TRITONBACKEND_ModelInstanceReportStatistics(instance, request, ok, exec_start, compute_start,
                                                                        compute_end, compute_end);
    if (s != nullptr) TRITONSERVER_ErrorDelete(s);
    s = TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL);
    if (s != nullptr) TRITONSERVER_ErrorDelete(s);
  }
  uint64_t exec_end = NowNs();
  TRITONSERVER_Error* s =
      TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, batch_size, exec_start, exec_start, exec_end, exec_end);
  if (s != nullptr) TRITONSERVER_ErrorDelete(s);
  s = TRITONSERVER_MetricIncrement(model->executed, count);
  if (s != nullptr) TRITONSERVER_ErrorDelete(s);
  return nullptr;
}

}  // extern "C"
