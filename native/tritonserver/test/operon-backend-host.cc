// operon-backend-host: drives a Triton backend through libtritonserver.so's
// embedding API exactly as Operon's worker does, without Node.
//
//   operon-backend-host selftest <build-dir>
//       The C++ test suite of the library against Operon's own backends in
//       <build-dir>/backends; prints one line per test and "N passed, M failed".
//   operon-backend-host cuda-selftest <build-dir> [--cpu-only] | cuda-bench <build-dir>
//       operon_cuda's suite and bench (cuda-selftest.cc).
//   operon-backend-host ipc-consumer <build-dir> <handle-hex>
//       The second process of selftest's CUDA IPC test (fake driver).
//   operon-backend-host run --name N --library L --model-dir D --config JSON
//       [--backend-config JSON] [--auto-complete] [--requests K] [--wait-ms T]
//       [--input NAME:DTYPE:D1,D2:V1,V2,...]... [--input-file NAME:DTYPE:D1,D2:FILE]...
//       [--output NAME]... [--dump-dir DIR] [--repeat R]
//       Loads one backend (e.g. Triton's own examples), sends K identical
//       requests as one batch and prints the model config and each response
//       (--dump-dir: each output's bytes to DIR/<request>-<response>-<name>.bin;
//       --repeat: first times R executions of the batch).
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include "host-session.h"
#include "triton/core/tritonbackend.h"

using host::MakeBytes;
using host::MakeTensor;
using host::RequestSpec;
using host::Session;
using host::Take;
using host::Tensor;

namespace {

std::mutex g_log_mutex;
std::vector<std::string> g_logs;

void CaptureLog(void*, uint32_t level, const char*, int, const char* message) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_logs.push_back(std::to_string(level) + " " + message);
}

struct Failure {
  std::string what;
};

#define EXPECT(cond, msg)                                                                                  \
  do {                                                                                                     \
    if (!(cond)) throw Failure{std::string(msg) + " (" #cond ", line " + std::to_string(__LINE__) + ")"}; \
  } while (false)

std::string Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos ? "" : "'" + haystack + "' does not contain '" + needle + "'";
}
#define EXPECT_CONTAINS(haystack, needle) \
  do {                                    \
    std::string why__ = Contains((haystack), (needle)); \
    EXPECT(why__.empty(), why__);         \
  } while (false)

// One backend + model + instance, torn down in reverse order.
struct Loaded {
  OperonHostBackend* backend = nullptr;
  OperonHostModel* model = nullptr;
  OperonHostInstance* instance = nullptr;
  Session session;
  ~Loaded() {
    if (instance) Take(OperonHostInstanceDestroy(instance));
    if (model) Take(OperonHostModelDestroy(model));
    if (backend) OperonHostBackendUnload(backend);
  }
};

std::string g_build;

std::string BackendPath(const std::string& name) { return g_build + "/backends/" + name + "/libtriton_" + name + ".so"; }

std::string TempModelDir() {
  char tmpl[] = "/tmp/operon-host-model-XXXXXX";
  char* dir = mkdtemp(tmpl);
  return dir ? dir : "/tmp";
}

std::string IdentityConfig(const std::string& name, const std::string& parameters = "", int max_batch = 8,
                           bool decoupled = false, bool with_outputs = true) {
  std::string c = "{\"name\":\"" + name + "\",\"backend\":\"operon_identity\",\"max_batch_size\":" +
                  std::to_string(max_batch) +
                  ",\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"4\"]},"
                  "{\"name\":\"INPUT1\",\"data_type\":\"TYPE_STRING\",\"dims\":[\"-1\"]}]";
  if (with_outputs)
    c += ",\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"4\"]},"
         "{\"name\":\"OUTPUT1\",\"data_type\":\"TYPE_STRING\",\"dims\":[\"-1\"]}]";
  if (decoupled) c += ",\"model_transaction_policy\":{\"decoupled\":true}";
  if (!parameters.empty()) c += ",\"parameters\":{" + parameters + "}";
  return c + "}";
}

std::string Param(const std::string& key, const std::string& value) {
  return "\"" + key + "\":{\"string_value\":\"" + value + "\"}";
}

// Loads operon_identity with `config` into `l`; returns the error text.
std::string Load(Loaded& l, const std::string& model_name, const std::string& config, bool auto_complete = false,
                 uint32_t kind = OPERON_HOST_KIND_CPU) {
  std::string e = Take(OperonHostBackendLoad("operon_identity", BackendPath("operon_identity").c_str(), "{}", &l.backend));
  if (!e.empty()) return e;
  e = Take(OperonHostModelCreate(l.backend, model_name.c_str(), 1, TempModelDir().c_str(), config.c_str(),
                                 auto_complete ? 1 : 0, &l.model));
  if (!e.empty()) return e;
  OperonHostCallbacks cb = l.session.Callbacks();
  return Take(OperonHostInstanceCreate(l.model, (model_name + "_0").c_str(), kind, 0, &cb, &l.instance));
}

RequestSpec FloatRequest(Session& s, const std::string& id, std::vector<float> values,
                         std::vector<std::string> outputs = {"OUTPUT0"}) {
  RequestSpec r;
  r.id = id;
  r.inputs.push_back(MakeTensor("INPUT0", "FP32", {1, static_cast<int64_t>(values.size())}, values));
  r.requested_outputs = std::move(outputs);
  r.record = s.NewRecord();
  return r;
}

std::string Execute(Loaded& l, std::vector<RequestSpec>& specs) {
  std::vector<OperonHostRequest> requests;
  for (auto& s : specs) requests.push_back(s.Build());
  return Take(OperonHostExecute(l.instance, requests.data(), static_cast<uint32_t>(requests.size())));
}

std::string ParamOf(const host::Response& r, const std::string& name) {
  for (const auto& p : r.parameters)
    if (p.first == name) return p.second;
  return "<none>";
}

std::vector<float> Floats(const Tensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

// ---- Tests ----

void TestIdentityFloat() {
  Loaded l;
  std::string e = Load(l, "ident_float", IdentityConfig("ident_float"));
  EXPECT(e.empty(), "load: " + e);
  std::vector<RequestSpec> specs;
  specs.push_back(FloatRequest(l.session, "r0", {1.5f, -2.f, 3.25f, 4.f}));
  e = Execute(l, specs);
  EXPECT(e.empty(), "execute: " + e);
  EXPECT(l.session.WaitAllDone(5000), "request not released/answered");
  const auto& rec = *specs[0].record;
  EXPECT(rec.responses.size() == 1, "one response expected");
  const auto& r = rec.responses[0];
  EXPECT(!r.has_error, "unexpected error: " + r.error_message);
  EXPECT(r.flags == OPERON_HOST_RESPONSE_FINAL, "final flag");
  EXPECT(r.outputs.size() == 1 && r.outputs[0].name == "OUTPUT0", "OUTPUT0 expected");
  EXPECT(r.outputs[0].datatype == "FP32", "datatype FP32");
  EXPECT((r.outputs[0].shape == std::vector<int64_t>{1, 4}), "shape [1,4]");
  EXPECT((Floats(r.outputs[0]) == std::vector<float>{1.5f, -2.f, 3.25f, 4.f}), "values echoed");
  EXPECT(ParamOf(r, "batch_requests") == "1", "batch_requests=1, got " + ParamOf(r, "batch_requests"));
  EXPECT(rec.release_flags == OPERON_HOST_RELEASE_ALL, "released with RELEASE_ALL");
  EXPECT(rec.request_stats == 1, "request statistics reported");
  OperonHostModelStatistics st{};
  OperonHostModelGetStatistics(l.model, &st);
  EXPECT(st.success_count == 1 && st.execution_count == 1 && st.inference_count == 1, "pull statistics");
  EXPECT(l.session.live_allocations == 0, "every output allocation was delivered");
}

void TestBatchSeesAllRequests() {
  Loaded l;
  std::string e = Load(l, "ident_batch", IdentityConfig("ident_batch"));
  EXPECT(e.empty(), "load: " + e);
  std::vector<RequestSpec> specs;
  specs.push_back(FloatRequest(l.session, "a", {1, 2, 3, 4}));
  specs.push_back(FloatRequest(l.session, "b", {5, 6, 7, 8}));
  e = Execute(l, specs);
  EXPECT(e.empty(), "execute: " + e);
  EXPECT(l.session.WaitAllDone(5000), "requests not done");
  for (auto& s : specs) {
    EXPECT(s.record->responses.size() == 1, "one response each");
    EXPECT(ParamOf(s.record->responses[0], "batch_requests") == "2", "the backend saw both requests");
  }
  EXPECT((Floats(specs[1].record->responses[0].outputs[0]) == std::vector<float>{5, 6, 7, 8}), "second request's data");
  EXPECT(l.session.batch_stats == 1 && l.session.batch_size_total == 2, "one batch of size 2 reported");
}

void TestBytesAndDefaultOutputs() {
  Loaded l;
  std::string e = Load(l, "ident_bytes", IdentityConfig("ident_bytes"));
  EXPECT(e.empty(), "load: " + e);
  RequestSpec r;
  r.id = "bytes";
  r.inputs.push_back(MakeTensor<float>("INPUT0", "FP32", {1, 4}, {0, 0, 0, 1}));
  r.inputs.push_back(MakeBytes("INPUT1", {1, 2}, {"héllo", ""}));
  r.record = l.session.NewRecord();  // no requested outputs: every output of the config
  std::vector<RequestSpec> specs;
  specs.push_back(std::move(r));
  e = Execute(l, specs);
  EXPECT(e.empty(), "execute: " + e);
  EXPECT(l.session.WaitAllDone(5000), "not done");
  const auto& resp = specs[0].record->responses.at(0);
  EXPECT(!resp.has_error, resp.error_message);
  EXPECT(resp.outputs.size() == 2, "both config outputs returned");
  EXPECT(resp.outputs[1].name == "OUTPUT1" && resp.outputs[1].datatype == "BYTES", "OUTPUT1 BYTES");
  EXPECT(resp.outputs[1].data == specs[0].inputs[1].data, "BYTES echoed byte for byte");
}

void TestMissingInputIsAnError() {
  Loaded l;
  std::string e = Load(l, "ident_missing", IdentityConfig("ident_missing"));
  EXPECT(e.empty(), "load: " + e);
  std::vector<RequestSpec> specs;
  specs.push_back(FloatRequest(l.session, "m", {1, 2, 3, 4}, {"OUTPUT1"}));
  e = Execute(l, specs);
  EXPECT(e.empty(), "execute: " + e);
  EXPECT(l.session.WaitAllDone(5000), "not done");
  const auto& resp = specs[0].record->responses.at(0);
  EXPECT(resp.has_error && resp.error_code == OPERON_HOST_ERROR_INVALID_ARG, "INVALID_ARG response");
  EXPECT_CONTAINS(resp.error_message, "needs input 'INPUT1'");
}

void TestDecoupledRepeat() {
  Loaded l;
  std::string e = Load(l, "ident_repeat", IdentityConfig("ident_repeat", Param("decoupled_repeat", "3") + "," + Param("repeat_delay_ms", "5"), 8, true));
  EXPECT(e.empty(), "load: " + e);
  std::vector<RequestSpec> specs;
  specs.push_back(FloatRequest(l.session, "d", {9, 8, 7, 6}));
  e = Execute(l, specs);
  EXPECT(e.empty(), "execute: " + e);
  {
    std::lock_guard<std::mutex> lock(l.session.mutex);
    EXPECT(specs[0].record->released, "released during Execute");
    EXPECT(specs[0].record->responses.empty(), "responses come after Execute returned (backend thread)");
  }
  EXPECT(l.session.WaitAllDone(5000), "final not seen");
  const auto& rs = specs[0].record->responses;
  EXPECT(rs.size() == 4, "3 responses + the final flag, got " + std::to_string(rs.size()));
  for (int k = 0; k < 3; ++k) {
    EXPECT(ParamOf(rs[k], "index") == std::to_string(k), "index parameter");
    EXPECT(rs[k].flags == 0 && !rs[k].empty, "non-final data response");
    EXPECT((Floats(rs[k].outputs.at(0)) == std::vector<float>{9, 8, 7, 6}), "data");
  }
  EXPECT(rs[3].empty && rs[3].flags == OPERON_HOST_RESPONSE_FINAL, "flags-only final");
}

void TestDecoupledCancel() {
  Loaded l;
  std::string e = Load(l, "ident_cancel", IdentityConfig("ident_cancel", Param("decoupled_repeat", "200") + "," + Param("repeat_delay_ms", "10"), 8, true));
  EXPECT(e.empty(), "load: " + e);
  std::vector<RequestSpec> specs;
  specs.push_back(FloatRequest(l.session, "c", {1, 1, 1, 1}));
  e = Execute(l, specs);
  EXPECT(e.empty(), "execute: " + e);
  EXPECT(l.session.WaitResponses(specs[0].record, 2, 5000), "two responses before cancelling");
  l.session.Cancel(specs[0].record);
  EXPECT(l.session.WaitAllDone(5000), "cancelled request never finished");
  const auto& rs = specs[0].record->responses;
  EXPECT(rs.size() < 200, "stopped early");
  EXPECT(rs.back().has_error && rs.back().error_code == OPERON_HOST_ERROR_CANCELLED, "CANCELLED final");
  EXPECT_CONTAINS(rs.back().error_message, "cancelled after");
}

void TestRejectConfig() {
  Loaded l;
  std::string e = Load(l, "ident_reject", IdentityConfig("ident_reject", Param("reject_config", "yes")));
  EXPECT_CONTAINS(e, "invalid config field 'parameters.reject_config'");
  EXPECT(l.model == nullptr, "no model");
}

void TestAutoComplete() {
  Loaded l;
  std::string e = Load(l, "ident_auto", IdentityConfig("ident_auto", "", 8, false, false), true);
  EXPECT(e.empty(), "load: " + e);
  char* config = nullptr;
  e = Take(OperonHostModelConfig(l.model, &config));
  EXPECT(e.empty(), e);
  std::string c(config);
  OperonHostFree(config);
  EXPECT_CONTAINS(c, "\"output\":[{\"name\":\"OUTPUT0\"");
  EXPECT_CONTAINS(c, "\"name\":\"OUTPUT1\"");
}

void TestConfigNormalizedAsTriton() {
  // config.pbtxt through protobuf's JSON mapping: int64 dims as strings, no
  // batch_input/batch_output, inputs without "optional". Backends get
  // Triton's normalized form.
  Loaded l;
  std::string raw =
      "{\"name\":\"ident_norm\",\"max_batch_size\":8,\"dynamic_batching\":{\"max_queue_delay_microseconds\":\"100\"},"
      "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"4\",\"-1\"]}],"
      "\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"4\",\"-1\"]}],"
      "\"parameters\":{\"p\":{\"string_value\":\"7\"}}}";
  std::string e = Load(l, "ident_norm", raw);
  EXPECT(e.empty(), "load: " + e);
  char* config = nullptr;
  Take(OperonHostModelConfig(l.model, &config));
  std::string c(config);
  OperonHostFree(config);
  EXPECT_CONTAINS(c, "\"dims\":[4,-1]");
  EXPECT_CONTAINS(c, "\"max_queue_delay_microseconds\":100");
  EXPECT_CONTAINS(c, "\"string_value\":\"7\"");  // parameters stay strings
  EXPECT_CONTAINS(c, "\"batch_input\":[]");
  EXPECT_CONTAINS(c, "\"batch_output\":[]");
  EXPECT_CONTAINS(c, "\"optional\":false");
  EXPECT_CONTAINS(c, "\"default_model_filename\":\"\"");
}

void TestMetricsText() {
  Loaded l;
  std::string e = Load(l, "ident_metric", IdentityConfig("ident_metric"));
  EXPECT(e.empty(), "load: " + e);
  std::vector<RequestSpec> specs;
  for (int i = 0; i < 3; ++i) specs.push_back(FloatRequest(l.session, "m" + std::to_string(i), {1, 2, 3, 4}));
  e = Execute(l, specs);
  EXPECT(e.empty(), e);
  EXPECT(l.session.WaitAllDone(5000), "not done");
  char* text = nullptr;
  Take(OperonHostMetricsText(&text));
  std::string t(text);
  OperonHostFree(text);
  EXPECT_CONTAINS(t, "# TYPE operon_identity_executed_requests counter");
  EXPECT_CONTAINS(t, "operon_identity_executed_requests{model=\"ident_metric\"} 3");
}

void TestLogCallback() {
  // The backend's TRITONBACKEND_Initialize logged through the callback
  // installed at start (the first load of the selftest).
  std::lock_guard<std::mutex> lock(g_log_mutex);
  bool found = false;
  for (const auto& s : g_logs) found = found || s.find("TRITONBACKEND_Initialize: operon_identity") != std::string::npos;
  EXPECT(found, "log record from the backend");
}

void TestRefcountAndConflicts() {
  OperonHostBackend* a = nullptr;
  OperonHostBackend* b = nullptr;
  std::string e = Take(OperonHostBackendLoad("operon_identity", BackendPath("operon_identity").c_str(), "{}", &a));
  EXPECT(e.empty(), e);
  e = Take(OperonHostBackendLoad("operon_identity", BackendPath("operon_identity").c_str(), "{}", &b));
  EXPECT(e.empty(), "second load shares the backend: " + e);
  OperonHostBackend* c = nullptr;
  uint32_t code = 0;
  e = Take(OperonHostBackendLoad("operon_identity", BackendPath("operon_wrong_api").c_str(), "{}", &c), &code);
  EXPECT(code == OPERON_HOST_ERROR_ALREADY_EXISTS, "another path for a loaded name: " + e);
  e = Take(OperonHostBackendLoad("x", "/nonexistent/libtriton_x.so", "{}", &c), &code);
  EXPECT(code == OPERON_HOST_ERROR_NOT_FOUND, "missing file: " + e);
  e = Take(OperonHostBackendLoad("y", BackendPath("operon_identity").c_str(), "{\"k\":1}", &c), &code);
  EXPECT(code == OPERON_HOST_ERROR_INVALID_ARG, "non-string backend config: " + e);
  OperonHostBackendUnload(b);
  OperonHostBackendUnload(a);
}

void TestMissingExecute() {
  OperonHostBackend* b = nullptr;
  uint32_t code = 0;
  std::string e = Take(OperonHostBackendLoad("operon_missing_execute", BackendPath("operon_missing_execute").c_str(), "", &b), &code);
  EXPECT(code == OPERON_HOST_ERROR_NOT_FOUND, "NOT_FOUND");
  EXPECT_CONTAINS(e, "does not export TRITONBACKEND_ModelInstanceExecute");
}

void TestWrongApiVersion() {
  OperonHostBackend* b = nullptr;
  uint32_t code = 0;
  std::string e = Take(OperonHostBackendLoad("operon_wrong_api", BackendPath("operon_wrong_api").c_str(), "", &b), &code);
  EXPECT(code == OPERON_HOST_ERROR_UNSUPPORTED, "UNSUPPORTED");
  EXPECT_CONTAINS(e, "built for TRITONBACKEND API 2.0");
  EXPECT_CONTAINS(e, "Operon implements TRITONBACKEND API 1.19");
}

void TestGpuRefused() {
  {
    // A GPU instance reaches the backend, which decides: operon_identity runs on the CPU only, so it refuses.
    Loaded g;
    std::string e = Load(g, "ident_gpu", IdentityConfig("ident_gpu"), false, OPERON_HOST_KIND_GPU);
    EXPECT(g.instance == nullptr, "no GPU instance of a CPU backend");
    EXPECT_CONTAINS(e, "operon_identity: instance 'ident_gpu_0' is KIND_GPU, but this backend runs on the CPU only: "
                       "use instance_group { kind: KIND_CPU }");
  }
  Loaded l;
  std::string e = Load(l, "ident_cpu", IdentityConfig("ident_cpu"));
  EXPECT(e.empty(), "CPU instance created: " + e);
  TRITONBACKEND_MemoryManager* manager = nullptr;
  // The memory manager is one per process; any non-NULL backend handle gets
  // it (the function does not dereference the handle).
  TRITONBACKEND_BackendMemoryManager(reinterpret_cast<TRITONBACKEND_Backend*>(l.backend), &manager);
  void* p = nullptr;
  TRITONSERVER_Error* err = TRITONBACKEND_MemoryManagerAllocate(manager, &p, TRITONSERVER_MEMORY_CPU_PINNED, 0, 64);
  EXPECT(err == nullptr && p != nullptr, "CPU_PINNED allocation");
  TRITONBACKEND_MemoryManagerFree(manager, p, TRITONSERVER_MEMORY_CPU_PINNED, 0);
}

// ---- Device-resident tensors, against the fake CUDA driver (test-fixtures/fake-cuda-driver.cc) ----

struct FakeCudaCounters {
  uint64_t htod, dtoh, dtod, allocs, frees, live_allocations, live_bytes, ipc_opens, ipc_closes;
};

// The fake driver's test entry points, from the same library the pool and
// operon_gpu_identity load (OPERON_CUDA_DRIVER_LIB, set by SelfTest).
struct FakeCuda {
  void (*counters)(FakeCudaCounters*) = nullptr;
  uint64_t (*dtoh_overlapping)(uint64_t, uint64_t) = nullptr;
  void (*set_memory_limit)(uint64_t) = nullptr;
  FakeCudaCounters Now() const {
    FakeCudaCounters c{};
    counters(&c);
    return c;
  }
};

std::string FakeCudaPath() { return g_build + "/test-fixtures/fake-cuda/libcuda.so.1"; }

const FakeCuda& Fake() {
  static FakeCuda fake;
  if (fake.counters == nullptr) {
    void* handle = dlopen(FakeCudaPath().c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT(handle != nullptr, "the fake CUDA driver loads: " + std::string(dlerror()));
    fake.counters = reinterpret_cast<void (*)(FakeCudaCounters*)>(dlsym(handle, "fake_cuda_counters"));
    fake.dtoh_overlapping = reinterpret_cast<uint64_t (*)(uint64_t, uint64_t)>(dlsym(handle, "fake_cuda_dtoh_overlapping"));
    fake.set_memory_limit = reinterpret_cast<void (*)(uint64_t)>(dlsym(handle, "fake_cuda_set_memory_limit"));
    EXPECT(fake.counters && fake.dtoh_overlapping && fake.set_memory_limit, "the fake driver's test entry points");
  }
  return fake;
}

std::string GpuIdentityConfig(const std::string& name) {
  return "{\"name\":\"" + name +
         "\",\"backend\":\"operon_gpu_identity\",\"max_batch_size\":8,"
         "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"4\"]}],"
         "\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"4\"]}]}";
}

// Loads operon_gpu_identity as a KIND_GPU instance on `device`; returns the error text.
std::string LoadGpu(Loaded& l, const std::string& model_name, int32_t device,
                    uint32_t kind = OPERON_HOST_KIND_GPU) {
  std::string e = Take(
      OperonHostBackendLoad("operon_gpu_identity", BackendPath("operon_gpu_identity").c_str(), "{}", &l.backend));
  if (!e.empty()) return e;
  e = Take(OperonHostModelCreate(l.backend, model_name.c_str(), 1, TempModelDir().c_str(),
                                 GpuIdentityConfig(model_name).c_str(), 0, &l.model));
  if (!e.empty()) return e;
  OperonHostCallbacks cb = l.session.Callbacks();
  return Take(OperonHostInstanceCreate(l.model, (model_name + "_0").c_str(), kind, device, &cb, &l.instance));
}

OperonHostDevicePoolStatistics Pool(int32_t device) {
  OperonHostDevicePoolStatistics s{};
  OperonHostDevicePoolGetStatistics(device, &s);
  return s;
}

// Runs one request of one tensor through `l` with the plan `keep_on_device`; returns its only response.
host::Response RunStep(Loaded& l, const std::string& id, Tensor input, int32_t keep_on_device) {
  std::vector<RequestSpec> specs(1);
  specs[0].id = id;
  input.name = "INPUT0";
  specs[0].inputs.push_back(std::move(input));
  specs[0].requested_outputs = {"OUTPUT0"};
  specs[0].record = l.session.NewRecord();
  specs[0].record->keep_on_device = keep_on_device;
  std::string e = Execute(l, specs);
  EXPECT(e.empty(), id + ": execute: " + e);
  EXPECT(l.session.WaitAllDone(5000), id + ": not released/answered");
  // The consumer released the request: the planner may now give its inputs' device regions back.
  const auto& rec = *specs[0].record;
  EXPECT(rec.released && rec.responses.size() == 1, id + ": one response and a release");
  EXPECT(!rec.responses[0].has_error, id + ": " + rec.responses[0].error_message);
  return rec.responses[0];
}

void TestDeviceTensorsBetweenSteps() {
  const FakeCuda& fake = Fake();
  Loaded a, b;
  std::string e = LoadGpu(a, "gpu_step_a", 0);
  EXPECT(e.empty(), "load step a: " + e);
  e = LoadGpu(b, "gpu_step_b", 0);
  EXPECT(e.empty(), "load step b: " + e);
  const std::vector<float> values{1.5f, -2.f, 3.25f, 4.f};
  for (int round = 0; round < 2; ++round) {
    const FakeCudaCounters before = fake.Now();
    // Step a: the client's input is in host memory; the plan keeps a's output on GPU 0 (b runs there).
    host::Response ra = RunStep(a, "a", MakeTensor("x", "FP32", {1, 4}, values), 0);
    EXPECT(ParamOf(ra, "input_memory") == "CPU" && ParamOf(ra, "output_memory") == "GPU:0",
           "step a read host memory and wrote GPU 0: " + ParamOf(ra, "input_memory") + " -> " + ParamOf(ra, "output_memory"));
    Tensor intermediate = ra.outputs.at(0);
    EXPECT(intermediate.memory_type == OPERON_HOST_MEMORY_GPU && intermediate.device == 0 && intermediate.data.empty(),
           "the intermediate tensor is delivered as device memory, not bytes");
    EXPECT(Pool(0).live_regions == 1, "one live region: the intermediate");
    // Step b reads it where it is; its own output stays on the device too, for the host's final copy.
    host::Response rb = RunStep(b, "b", intermediate, 0);
    EXPECT(ParamOf(rb, "input_memory") == "GPU:0" && ParamOf(rb, "output_memory") == "GPU:0",
           "step b read and wrote GPU 0: " + ParamOf(rb, "input_memory") + " -> " + ParamOf(rb, "output_memory"));
    // b released its request: the intermediate region goes back to the pool.
    e = Take(OperonHostDeviceFree(0, intermediate.device_base));
    EXPECT(e.empty(), "free the intermediate: " + e);
    // The client's answer: copied to host memory once, by the host.
    const Tensor& last = rb.outputs.at(0);
    std::vector<float> answer(4);
    e = Take(OperonHostDeviceCopyToHost(0, answer.data(), last.device_base, last.device_bytes));
    EXPECT(e.empty(), "copy the answer to host memory: " + e);
    EXPECT(answer == values, "the answer equals the input after two device steps");
    e = Take(OperonHostDeviceFree(0, last.device_base));
    EXPECT(e.empty(), "free the answer's region: " + e);
    const FakeCudaCounters after = fake.Now();
    EXPECT(fake.dtoh_overlapping(reinterpret_cast<uint64_t>(intermediate.device_base), intermediate.device_bytes) == 0,
           "the intermediate tensor was never copied to host memory");
    EXPECT(after.htod - before.htod == 1 && after.dtod - before.dtod == 1 && after.dtoh - before.dtoh == 1,
           "one copy in, one on the device, one out; got htod " + std::to_string(after.htod - before.htod) + ", dtod " +
               std::to_string(after.dtod - before.dtod) + ", dtoh " + std::to_string(after.dtoh - before.dtoh));
    EXPECT(Pool(0).live_regions == 0, "every region is back in the pool after the request");
    // The second round reuses the pool's cached regions: no new driver allocation.
    if (round == 1) EXPECT(after.allocs == before.allocs, "the pool reused its regions");
  }
  EXPECT(a.session.live_allocations == 0 && b.session.live_allocations == 0, "every output allocation was delivered");
  EXPECT(Take(OperonHostDevicePoolTrim(0)).empty() && Pool(0).cached_regions == 0, "trim gives the cache back");
  EXPECT(fake.Now().live_allocations == 0, "no device memory left with the driver");
}

void TestDeviceTensorFallbacksAndRefusals() {
  const FakeCuda& fake = Fake();
  const std::vector<float> values{1.f, 2.f, 3.f, 4.f};
  Loaded a;
  std::string e = LoadGpu(a, "gpu_fallback", 0);
  EXPECT(e.empty(), "load: " + e);
  // A CPU consumer, or one on another GPU: the plan gives host memory, which the backend copies to.
  for (int32_t plan : {-1, 1}) {
    host::Response r = RunStep(a, "fallback", MakeTensor("x", "FP32", {1, 4}, values), plan);
    EXPECT(ParamOf(r, "output_memory") == "CPU", "host memory for plan " + std::to_string(plan) + ", got " + ParamOf(r, "output_memory"));
    EXPECT(r.outputs.at(0).memory_type == OPERON_HOST_MEMORY_CPU && Floats(r.outputs.at(0)) == values, "the bytes in host memory");
  }
  EXPECT(Pool(0).live_regions == 0 && Pool(1).live_regions == 0, "no device memory taken for a host-memory plan");

  void* region = nullptr;
  e = Take(OperonHostDeviceAllocate(0, 16, &region));
  EXPECT(e.empty() && region != nullptr, "allocate on GPU 0: " + e);
  e = Take(OperonHostDeviceCopyFromHost(0, region, values.data(), 16));
  EXPECT(e.empty(), "copy in: " + e);
  Tensor on_gpu0{"INPUT0", "FP32", {1, 4}, {}, OPERON_HOST_MEMORY_GPU, 0, region, 16};
  auto refused = [&](Loaded& l, Tensor t, const std::string& expected) {
    std::vector<RequestSpec> specs(1);
    specs[0].inputs.push_back(std::move(t));
    specs[0].requested_outputs = {"OUTPUT0"};
    specs[0].record = l.session.NewRecord();
    uint32_t code = 0;
    std::vector<OperonHostRequest> requests{specs[0].Build()};
    std::string why = Take(OperonHostExecute(l.instance, requests.data(), 1), &code);
    EXPECT(code == OPERON_HOST_ERROR_INVALID_ARG, "INVALID_ARG for: " + expected + " (got '" + why + "')");
    EXPECT_CONTAINS(why, expected);
    EXPECT(!specs[0].record->released && specs[0].record->responses.empty(), "refused before the backend saw it");
  };
  Loaded other;
  e = LoadGpu(other, "gpu_other", 1);
  EXPECT(e.empty(), "load on GPU 1: " + e);
  refused(other, on_gpu0, "input 'INPUT0' is in GPU 0's memory, but instance 'gpu_other_0' runs on GPU 1: copy it to host memory first");
  Loaded cpu;
  e = Load(cpu, "cpu_consumer", IdentityConfig("cpu_consumer"));
  EXPECT(e.empty(), "load the CPU consumer: " + e);
  refused(cpu, on_gpu0, "input 'INPUT0' is in GPU 0's memory, but instance 'cpu_consumer_0' is KIND_CPU: copy it to host memory first");
  Tensor outside = on_gpu0;
  outside.device_base = static_cast<char*>(region) + 8;  // runs 8 bytes past the region's end
  refused(a, outside, "16 bytes of GPU memory that are not inside one region of GPU 0's pool");
  e = Take(OperonHostDeviceFree(0, region));
  EXPECT(e.empty(), "free: " + e);
  refused(a, on_gpu0, "not inside one region of GPU 0's pool");  // freed: no longer the pool's
  EXPECT_CONTAINS(Take(OperonHostDeviceFree(0, region)), "OperonHostDeviceFree: no region of GPU 0's pool starts there");

  // The backend runs on GPUs only, and a GPU the driver does not have is refused at load.
  Loaded cpu_kind;
  EXPECT_CONTAINS(LoadGpu(cpu_kind, "gpu_as_cpu", 0, OPERON_HOST_KIND_CPU),
                  "instance 'gpu_as_cpu_0' is CPU; this backend runs on GPUs only: use instance_group { kind: KIND_GPU }");
  Loaded missing;
  EXPECT_CONTAINS(LoadGpu(missing, "gpu_missing", 5), "instance 'gpu_missing_0' on GPU 5: GPU 5: cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE");

  // Triton's memory manager serves GPU memory from the same pool; out of memory is UNAVAILABLE, naming the driver's error.
  TRITONBACKEND_MemoryManager* manager = nullptr;
  TRITONBACKEND_BackendMemoryManager(reinterpret_cast<TRITONBACKEND_Backend*>(a.backend), &manager);
  void* p = nullptr;
  TRITONSERVER_Error* err = TRITONBACKEND_MemoryManagerAllocate(manager, &p, TRITONSERVER_MEMORY_GPU, 1, 64);
  EXPECT(err == nullptr && p != nullptr && Pool(1).live_regions == 1, "GPU allocation from the memory manager");
  err = TRITONBACKEND_MemoryManagerFree(manager, p, TRITONSERVER_MEMORY_GPU, 1);
  EXPECT(err == nullptr && Pool(1).live_regions == 0, "GPU free through the memory manager");
  fake.set_memory_limit(1 << 20);
  err = TRITONBACKEND_MemoryManagerAllocate(manager, &p, TRITONSERVER_MEMORY_GPU, 1, 4 << 20);
  fake.set_memory_limit(UINT64_MAX);
  EXPECT(err != nullptr && TRITONSERVER_ErrorCode(err) == TRITONSERVER_ERROR_UNAVAILABLE, "out of device memory is UNAVAILABLE");
  EXPECT_CONTAINS(TRITONSERVER_ErrorMessage(err), "4194304 bytes on GPU 1: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY");
  TRITONSERVER_ErrorDelete(err);
  err = TRITONBACKEND_MemoryManagerAllocate(manager, &p, TRITONSERVER_MEMORY_GPU, 7, 64);
  EXPECT(err != nullptr, "a GPU the driver does not have");
  EXPECT_CONTAINS(TRITONSERVER_ErrorMessage(err), "GPU 7: cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE");
  TRITONSERVER_ErrorDelete(err);
  Take(OperonHostDevicePoolTrim(0));
  Take(OperonHostDevicePoolTrim(1));
  EXPECT(fake.Now().live_allocations == 0, "no device memory left with the driver");
}

void TestCrashIsASegfault() {
  pid_t pid = fork();
  if (pid == 0) {
    Loaded l;
    if (!Load(l, "ident_crash", IdentityConfig("ident_crash", Param("crash_on_execute", "true"))).empty()) _exit(3);
    std::vector<RequestSpec> specs;
    specs.push_back(FloatRequest(l.session, "x", {1, 2, 3, 4}));
    Execute(l, specs);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "the child died of SIGSEGV, status " + std::to_string(status));
}

void TestEnums() {
  EXPECT(std::string(TRITONSERVER_DataTypeString(TRITONSERVER_TYPE_BF16)) == "BF16", "BF16");
  EXPECT(TRITONSERVER_StringToDataType("BYTES") == TRITONSERVER_TYPE_BYTES && TRITONSERVER_TYPE_BYTES == 13, "BYTES=13");
  EXPECT(TRITONSERVER_DataTypeByteSize(TRITONSERVER_TYPE_FP64) == 8, "FP64 size");
  EXPECT(std::string(TRITONSERVER_MemoryTypeString(TRITONSERVER_MEMORY_CPU_PINNED)) == "CPU_PINNED", "memtype");
  TRITONSERVER_Error* err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_CANCELLED, "x");
  EXPECT(std::string(TRITONSERVER_ErrorCodeString(err)) == "Cancelled" && TRITONSERVER_ErrorCode(err) == 7, "CANCELLED=7");
  TRITONSERVER_ErrorDelete(err);
}

std::string Hex(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const auto b = static_cast<const unsigned char*>(data)[i];
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

bool Unhex(const std::string& text, void* data, size_t n) {
  if (text.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned value = 0;
    if (std::sscanf(text.c_str() + 2 * i, "%2x", &value) != 1) return false;
    static_cast<unsigned char*>(data)[i] = static_cast<unsigned char>(value);
  }
  return true;
}

// `ipc-consumer <build-dir> <handle-hex>`: the second process of the test below, as the consumer's worker would
// be: imports the producer's region, runs step b of operon_gpu_identity on it in place, keeps b's output on the
// device, copies that to host memory and prints what it saw.
int IpcConsumer(const std::string& build, const std::string& hex) {
  g_build = build;
  setenv("OPERON_CUDA_DRIVER_LIB", FakeCudaPath().c_str(), 1);
  const FakeCuda& fake = Fake();
  OperonHostDeviceIpcHandle handle{};
  EXPECT(Unhex(hex, &handle, sizeof handle), "a handle in hex");
  void* base = nullptr;
  std::string e = Take(OperonHostDeviceImport(0, &handle, &base));
  EXPECT(e.empty() && base != nullptr, "import: " + e);
  void* again = nullptr;
  e = Take(OperonHostDeviceImport(0, &handle, &again));
  EXPECT(e.empty() && again == base, "a second import of the region reuses its mapping: " + e);
  Loaded b;
  e = LoadGpu(b, "ipc_step_b", 0);
  EXPECT(e.empty(), "load step b: " + e);
  Tensor input{"INPUT0", "FP32", {1, 4}, {}, OPERON_HOST_MEMORY_GPU, 0, base, 16};
  host::Response rb = RunStep(b, "b", input, 0);
  const Tensor& y = rb.outputs.at(0);
  std::vector<float> answer(4);
  e = Take(OperonHostDeviceCopyToHost(0, answer.data(), y.device_base, y.device_bytes));
  EXPECT(e.empty(), "copy the answer: " + e);
  EXPECT(Take(OperonHostDeviceFree(0, y.device_base)).empty(), "free the answer's region");
  std::printf("memory %s -> %s\n", ParamOf(rb, "input_memory").c_str(), ParamOf(rb, "output_memory").c_str());
  std::printf("values %g,%g,%g,%g\n", answer[0], answer[1], answer[2], answer[3]);
  std::printf("imported_dtoh %llu\n", static_cast<unsigned long long>(fake.dtoh_overlapping(reinterpret_cast<uint64_t>(base), 16)));
  std::printf("imported_regions %llu\n", static_cast<unsigned long long>(Pool(0).imported_regions));
  e = Take(OperonHostDeviceImportsClose(0));
  EXPECT(e.empty(), "close the imports: " + e);
  const FakeCudaCounters c = fake.Now();
  std::printf("ipc_opens %llu ipc_closes %llu\n", static_cast<unsigned long long>(c.ipc_opens),
              static_cast<unsigned long long>(c.ipc_closes));
  return 0;
}

void TestDeviceTensorAcrossProcesses() {
  const FakeCuda& fake = Fake();
  Loaded a;
  std::string e = LoadGpu(a, "ipc_step_a", 0);
  EXPECT(e.empty(), "load step a: " + e);
  const std::vector<float> values{0.5f, 8.f, -3.f, 7.25f};
  host::Response ra = RunStep(a, "a", MakeTensor("x", "FP32", {1, 4}, values), 0);
  Tensor intermediate = ra.outputs.at(0);
  EXPECT(intermediate.memory_type == OPERON_HOST_MEMORY_GPU, "step a's output stayed on GPU 0");
  OperonHostDeviceIpcHandle handle{};
  e = Take(OperonHostDeviceExport(0, intermediate.device_base, &handle));
  EXPECT(e.empty() && handle.offset == 0, "export: " + e);
  // CUDA opens a handle only in another process.
  void* own = nullptr;
  EXPECT_CONTAINS(Take(OperonHostDeviceImport(0, &handle, &own)), "cuIpcOpenMemHandle failed: CUDA_ERROR_INVALID_CONTEXT");
  char self[4096] = {};
  EXPECT(readlink("/proc/self/exe", self, sizeof self - 1) > 0, "this program's path");
  const std::string command =
      "'" + std::string(self) + "' ipc-consumer '" + g_build + "' " + Hex(&handle, sizeof handle) + " 2>&1";
  FILE* child = popen(command.c_str(), "r");
  EXPECT(child != nullptr, "start the consumer process");
  std::string out;
  char line[512];
  while (std::fgets(line, sizeof line, child) != nullptr) out += line;
  const int status = pclose(child);
  EXPECT(status == 0, "the consumer process succeeded: " + out);
  EXPECT_CONTAINS(out, "memory GPU:0 -> GPU:0\n");
  EXPECT_CONTAINS(out, "values 0.5,8,-3,7.25\n");
  EXPECT_CONTAINS(out, "imported_dtoh 0\n");       // the consumer never copied the tensor to host memory
  EXPECT_CONTAINS(out, "imported_regions 1\n");    // opened once, for both imports
  EXPECT_CONTAINS(out, "ipc_opens 1 ipc_closes 1\n");
  EXPECT(Take(OperonHostDeviceFree(0, intermediate.device_base)).empty(), "the producer frees its region after the consumer released");
  EXPECT(fake.dtoh_overlapping(reinterpret_cast<uint64_t>(intermediate.device_base), intermediate.device_bytes) == 0,
         "nor did the producer");
  EXPECT_CONTAINS(Take(OperonHostDeviceExport(0, intermediate.device_base, &handle)),
                  "the address is not inside a region of GPU 0's own pool");
  Take(OperonHostDevicePoolTrim(0));
}

int SelfTest(const std::string& build) {
  g_build = build;
  // Device memory comes from the fake driver here, never from a real GPU's (the GPU suite is cuda-selftest).
  setenv("OPERON_CUDA_DRIVER_LIB", FakeCudaPath().c_str(), 1);
  OperonHostSetLogCallback(CaptureLog, nullptr, 0);
  std::vector<std::pair<std::string, std::function<void()>>> tests = {
      {"enum values and strings match Triton's", TestEnums},
      {"identity FP32: response, release, statistics", TestIdentityFloat},
      {"a batch of two requests reaches one Execute", TestBatchSeesAllRequests},
      {"BYTES identity and default requested outputs", TestBytesAndDefaultOutputs},
      {"a missing input fails only its request", TestMissingInputIsAnError},
      {"log records reach the host callback", TestLogCallback},
      {"decoupled: responses from a backend thread, then FINAL", TestDecoupledRepeat},
      {"decoupled: cancellation stops the stream", TestDecoupledCancel},
      {"backend config validation error surfaces", TestRejectConfig},
      {"auto-complete via TRITONBACKEND_ModelSetConfig", TestAutoComplete},
      {"model config normalized as Triton gives it to backends", TestConfigNormalizedAsTriton},
      {"custom metrics as Prometheus text", TestMetricsText},
      {"backend load is ref-counted; conflicts refused", TestRefcountAndConflicts},
      {"missing TRITONBACKEND_ModelInstanceExecute refused", TestMissingExecute},
      {"wrong API major refused naming both versions", TestWrongApiVersion},
      {"GPU instances reach the backend (operon_identity refuses them)", TestGpuRefused},
      {"an operator's intermediate tensor stays on the GPU between two GPU steps (fake driver)", TestDeviceTensorsBetweenSteps},
      {"device tensors: host-memory fallbacks, refused GPU inputs, the memory manager's GPU memory", TestDeviceTensorFallbacksAndRefusals},
      {"a device tensor crosses processes through CUDA IPC (fake driver): opened once, read in place", TestDeviceTensorAcrossProcesses},
      {"crash_on_execute raises SIGSEGV", TestCrashIsASegfault},
  };
  int passed = 0, failed = 0;
  for (auto& t : tests) {
    try {
      t.second();
      std::printf("ok - %s\n", t.first.c_str());
      passed += 1;
    } catch (const Failure& f) {
      std::printf("not ok - %s: %s\n", t.first.c_str(), f.what.c_str());
      failed += 1;
    }
    std::fflush(stdout);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

// ---- run: one backend from the command line ----

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

std::string ReadFileOrText(const std::string& s) {
  if (!s.empty() && s[0] == '@') {
    std::ifstream f(s.substr(1));
    std::stringstream b;
    b << f.rdbuf();
    return b.str();
  }
  return s;
}

Tensor ParseInput(const std::string& spec) {
  auto parts = Split(spec, ':');
  if (parts.size() < 3) throw Failure{"--input wants NAME:DTYPE:D1,D2:V1,V2, got " + spec};
  std::vector<int64_t> shape;
  for (auto& d : Split(parts[2], ',')) shape.push_back(std::stoll(d));
  auto values = parts.size() > 3 ? Split(parts[3], ',') : std::vector<std::string>{};
  const std::string& dt = parts[1];
  if (dt == "FP32") {
    std::vector<float> v;
    for (auto& x : values) v.push_back(std::stof(x));
    return MakeTensor(parts[0], dt, shape, v);
  }
  if (dt == "INT32") {
    std::vector<int32_t> v;
    for (auto& x : values) v.push_back(std::stoi(x));
    return MakeTensor(parts[0], dt, shape, v);
  }
  if (dt == "INT64") {
    std::vector<int64_t> v;
    for (auto& x : values) v.push_back(std::stoll(x));
    return MakeTensor(parts[0], dt, shape, v);
  }
  if (dt == "UINT32") {
    std::vector<uint32_t> v;
    for (auto& x : values) v.push_back(static_cast<uint32_t>(std::stoul(x)));
    return MakeTensor(parts[0], dt, shape, v);
  }
  if (dt == "BYTES") return MakeBytes(parts[0], shape, values);
  throw Failure{"--input: datatype " + dt + " not supported by this command"};
}

// NAME:DTYPE:D1,D2:FILE, the file's bytes as the tensor's data.
Tensor ParseInputFile(const std::string& spec) {
  auto parts = Split(spec, ':');
  if (parts.size() != 4) throw Failure{"--input-file wants NAME:DTYPE:D1,D2:FILE, got " + spec};
  Tensor t{parts[0], parts[1], {}, {}};
  for (auto& d : Split(parts[2], ',')) t.shape.push_back(std::stoll(d));
  std::ifstream f(parts[3], std::ios::binary);
  if (!f) throw Failure{"--input-file: cannot read " + parts[3]};
  t.data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return t;
}

std::string Show(const Tensor& t) {
  std::string s = t.name + " " + t.datatype + " [";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? "," : "") + std::to_string(t.shape[i]);
  s += "] =";
  size_t n = 0;
  auto add = [&](const std::string& v) {
    if (n++ < 16) s += " " + v;
  };
  if (t.datatype == "FP32") {
    for (size_t i = 0; i + 4 <= t.data.size(); i += 4) { float v; std::memcpy(&v, &t.data[i], 4); add(std::to_string(v)); }
  } else if (t.datatype == "INT32") {
    for (size_t i = 0; i + 4 <= t.data.size(); i += 4) { int32_t v; std::memcpy(&v, &t.data[i], 4); add(std::to_string(v)); }
  } else if (t.datatype == "UINT32") {
    for (size_t i = 0; i + 4 <= t.data.size(); i += 4) { uint32_t v; std::memcpy(&v, &t.data[i], 4); add(std::to_string(v)); }
  } else if (t.datatype == "INT64") {
    for (size_t i = 0; i + 8 <= t.data.size(); i += 8) { int64_t v; std::memcpy(&v, &t.data[i], 8); add(std::to_string(v)); }
  } else if (t.datatype == "BYTES") {
    for (size_t i = 0; i + 4 <= t.data.size();) {
      uint32_t len; std::memcpy(&len, &t.data[i], 4); i += 4;
      add("\"" + std::string(&t.data[i], std::min<size_t>(len, t.data.size() - i)) + "\"");
      i += len;
    }
  } else {
    add("<" + std::to_string(t.data.size()) + " bytes>");
  }
  if (n > 16) s += " ... (" + std::to_string(n) + " values)";
  return s;
}

int Run(int argc, char** argv) {
  std::string name, library, model_dir, config = "{}", backend_config = "{}";
  bool auto_complete = false;
  int requests = 1, wait_ms = 10000, repeat = 1, gpu = -1;
  std::string dump_dir;
  std::vector<Tensor> inputs;
  std::vector<std::string> outputs;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure{a + " needs a value"};
      return argv[++i];
    };
    if (a == "--name") name = next();
    else if (a == "--library") library = next();
    else if (a == "--model-dir") model_dir = next();
    else if (a == "--config") config = ReadFileOrText(next());
    else if (a == "--backend-config") backend_config = next();
    else if (a == "--auto-complete") auto_complete = true;
    else if (a == "--requests") requests = std::stoi(next());
    else if (a == "--wait-ms") wait_ms = std::stoi(next());
    else if (a == "--input") inputs.push_back(ParseInput(next()));
    else if (a == "--input-file") inputs.push_back(ParseInputFile(next()));
    else if (a == "--dump-dir") dump_dir = next();
    else if (a == "--repeat") repeat = std::stoi(next());
    else if (a == "--gpu") gpu = std::stoi(next());
    else if (a == "--output") outputs.push_back(next());
    else throw Failure{"unknown option " + a};
  }
  if (name.empty() || library.empty()) throw Failure{"run needs --name and --library"};
  OperonHostSetLogCallback(
      [](void*, uint32_t level, const char* file, int line, const char* msg) {
        static const char* levels[] = {"INFO", "WARN", "ERROR", "VERBOSE"};
        std::printf("log %s %s:%d %s\n", level < 4 ? levels[level] : "?", file ? file : "-", line, msg);
      },
      nullptr, 1);
  Loaded l;
  std::string e = Take(OperonHostBackendLoad(name.c_str(), library.c_str(), backend_config.c_str(), &l.backend));
  if (!e.empty()) { std::printf("backend load failed: %s\n", e.c_str()); return 2; }
  e = Take(OperonHostModelCreate(l.backend, "model", 1, model_dir.c_str(), config.c_str(), auto_complete ? 1 : 0, &l.model));
  if (!e.empty()) { std::printf("model create failed: %s\n", e.c_str()); return 2; }
  char* c = nullptr;
  Take(OperonHostModelConfig(l.model, &c));
  std::printf("config %s\n", c);
  OperonHostFree(c);
  OperonHostCallbacks cb = l.session.Callbacks();
  // --gpu D: a KIND_GPU instance on device D (else KIND_CPU).
  e = Take(OperonHostInstanceCreate(l.model, "model_0", gpu >= 0 ? OPERON_HOST_KIND_GPU : OPERON_HOST_KIND_CPU,
                                    gpu >= 0 ? gpu : 0, &cb, &l.instance));
  if (!e.empty()) { std::printf("instance create failed: %s\n", e.c_str()); return 2; }
  // --repeat: time K executions of the same batch first (responses dropped).
  if (repeat > 1) {
    auto start = std::chrono::steady_clock::now();
    std::clock_t cpu_start = std::clock();
    for (int k = 0; k < repeat; ++k) {
      std::vector<RequestSpec> again(requests);
      for (int i = 0; i < requests; ++i) {
        again[i].inputs = inputs;
        again[i].requested_outputs = outputs;
        again[i].record = l.session.NewRecord();
      }
      Execute(l, again);
      l.session.WaitAllDone(wait_ms);
      std::lock_guard<std::mutex> lock(l.session.mutex);
      l.session.records.clear();
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / repeat;
    double cpu_us = 1e6 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC / repeat;
    std::printf("timing: %d executions of %d request(s), %.1f us wall, %.1f us CPU per execution (input copies included)\n",
                repeat, requests, us, cpu_us);
  }
  std::vector<RequestSpec> specs(requests);
  for (int i = 0; i < requests; ++i) {
    specs[i].id = "req" + std::to_string(i);
    specs[i].inputs = inputs;
    specs[i].requested_outputs = outputs;
    specs[i].record = l.session.NewRecord();
  }

  e = Execute(l, specs);
  if (!e.empty()) std::printf("execute failed: %s\n", e.c_str());
  bool done = l.session.WaitAllDone(wait_ms);
  std::lock_guard<std::mutex> lock(l.session.mutex);
  for (auto& s : specs) {
    const auto& rec = *s.record;
    for (size_t k = 0; k < rec.responses.size(); ++k) {
      const auto& r = rec.responses[k];
      std::printf("request %d response %zu%s%s", rec.index, k, r.flags & OPERON_HOST_RESPONSE_FINAL ? " FINAL" : "",
                  r.empty ? " (flags only)" : "");
      if (r.has_error) std::printf(" error %u: %s", r.error_code, r.error_message.c_str());
      std::printf("\n");
      for (const auto& o : r.outputs) {
        std::printf("  %s\n", Show(o).c_str());
        if (!dump_dir.empty()) {
          std::string file = dump_dir + "/" + std::to_string(rec.index) + "-" + std::to_string(k) + "-" + o.name + ".bin";
          std::ofstream f(file, std::ios::binary);
          f.write(o.data.data(), static_cast<std::streamsize>(o.data.size()));
        }
      }
      for (const auto& p : r.parameters) std::printf("  parameter %s=%s\n", p.first.c_str(), p.second.c_str());
    }
    std::printf("request %d released=%d\n", rec.index, rec.released ? 1 : 0);
  }
  std::printf("statistics: %d batch report(s), batch size total %llu\n", l.session.batch_stats,
              static_cast<unsigned long long>(l.session.batch_size_total));
  char* text = nullptr;
  Take(OperonHostMetricsText(&text));
  if (text && *text) std::printf("metrics:\n%s", text);
  OperonHostFree(text);
  std::printf(done ? "done\n" : "TIMEOUT: not every request was released and finished\n");
  return done ? 0 : 1;
}

}  // namespace

int CudaSelfTest(const std::string& build, bool cpu_only);  // cuda-selftest.cc
int CudaBench(const std::string& build);
int NvmlCheck(const std::string& library);  // nvml-check.cc

int main(int argc, char** argv) {
  // Output memory stays mapped between executions, as the worker's
  // shared-memory segment does: without this, glibc gives every large output
  // buffer back to the kernel and --repeat timings measure page faults.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  try {
    std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "selftest" && argc == 3) return SelfTest(argv[2]);
    if (cmd == "run") return Run(argc, argv);
    if (cmd == "cuda-selftest" && (argc == 3 || (argc == 4 && std::string(argv[3]) == "--cpu-only")))
      return CudaSelfTest(argv[2], argc == 4);
    if (cmd == "cuda-bench" && argc == 3) return CudaBench(argv[2]);
    if (cmd == "nvml-check" && argc == 3) return NvmlCheck(argv[2]);
    if (cmd == "ipc-consumer" && argc == 4) return IpcConsumer(argv[2], argv[3]);
  } catch (const Failure& f) {
    std::fprintf(stderr, "operon-backend-host: %s\n", f.what.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "operon-backend-host: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr,
               "usage: operon-backend-host selftest <build-dir>\n"
               "       operon-backend-host cuda-selftest <build-dir> [--cpu-only]\n"
               "       operon-backend-host cuda-bench <build-dir>\n"
               "       operon-backend-host nvml-check <libnvidia-ml.so.1>\n"
               "       operon-backend-host run --name N --library L --model-dir D --config JSON|@file "
               "[--backend-config JSON] [--auto-complete] [--requests K] [--wait-ms T] "
               "[--input NAME:DTYPE:D1,D2:V1,V2]... [--input-file NAME:DTYPE:D1,D2:FILE]... [--output NAME]... "
               "[--dump-dir DIR] [--repeat K] [--gpu DEVICE]\n");
  return 2;
}
