// operon-backend-host cuda-selftest / cuda-bench: operon_cuda driven through
// libtritonserver.so's embedding API exactly as a worker does, every GPU
// output checked against the CPU references of cuda-reference.h.
//
//   cuda-selftest <build-dir> [--cpu-only]
//     --cpu-only: the half that needs no GPU (references, weights files, the
//     references against operon_image_preprocess, config errors and the
//     refusals of CPU instances and of a GPU-less host). Without it, also
//     the GPU half (needs a CUDA device).
//   cuda-bench <build-dir>
//     prints Markdown tables: preprocessing kernel bandwidth, MLP
//     throughput by batch size and precision, 1 vs 2 vs 4 streams.
#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>

#include "cuda-reference.h"
#include "cuda-refusal.h"
#include "host-session.h"

using host::MakeTensor;
using host::RequestSpec;
using host::Session;
using host::Take;
using host::Tensor;
using operon_cuda::Precision;

namespace {

struct Failure {
  std::string what;
};
#define CHECK(cond, msg)                                                                                   \
  do {                                                                                                     \
    if (!(cond)) throw Failure{std::string(msg) + " (" #cond ", line " + std::to_string(__LINE__) + ")"}; \
  } while (false)
bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string g_build;
std::string Lib(const std::string& name) { return g_build + "/backends/" + name + "/libtriton_" + name + ".so"; }

std::string TempDir() {
  char tmpl[] = "/tmp/operon-cuda-test-XXXXXX";
  char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

// A backend + model + instance (kind and device as given), torn down in reverse.
struct Loaded {
  OperonHostBackend* backend = nullptr;
  OperonHostModel* model = nullptr;
  OperonHostInstance* instance = nullptr;
  Session session;
  std::string error;
  ~Loaded() {
    if (instance) Take(OperonHostInstanceDestroy(instance));
    if (model) Take(OperonHostModelDestroy(model));
    if (backend) OperonHostBackendUnload(backend);
  }
};

void Load(Loaded& l, const std::string& backend, const std::string& dir, const std::string& config, uint32_t kind, int device) {
  l.error = Take(OperonHostBackendLoad(backend.c_str(), Lib(backend).c_str(), "{}", &l.backend));
  if (l.error.empty()) l.error = Take(OperonHostModelCreate(l.backend, "m", 1, dir.c_str(), config.c_str(), 0, &l.model));
  OperonHostCallbacks cb = l.session.Callbacks();
  if (l.error.empty()) l.error = Take(OperonHostInstanceCreate(l.model, "m_0", kind, device, &cb, &l.instance));
}

std::string Params(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string s = "\"parameters\":{";
  for (size_t i = 0; i < kv.size(); ++i) s += (i ? "," : "") + ("\"" + kv[i].first + "\":{\"string_value\":\"" + kv[i].second + "\"}");
  return s + "}";
}

std::string MlpConfig(const std::vector<std::pair<std::string, std::string>>& kv) {
  return "{\"name\":\"m\",\"backend\":\"operon_cuda\",\"max_batch_size\":0," + Params(kv) + "}";
}

// A model folder with version 1 holding `w` as mlp.weights.
std::string MlpDir(const operon_cuda::MlpWeights& w) {
  std::string dir = TempDir();
  std::string why;
  mkdir((dir + "/1").c_str(), 0755);
  if (!operon_cuda::WriteMlpWeights(dir + "/1/mlp.weights", w, &why)) throw Failure{why};
  return dir;
}

std::vector<uint8_t> RandomPixels(std::mt19937& rng, size_t count) {
  std::vector<uint8_t> v(count);
  for (auto& b : v) b = static_cast<uint8_t>(rng() & 0xff);
  return v;
}

// Runs one batch of requests; returns each request's first response.
std::vector<host::Response> Run(Loaded& l, std::vector<std::vector<Tensor>> inputs, const std::string& output) {
  std::vector<RequestSpec> specs(inputs.size());
  std::vector<OperonHostRequest> requests;
  for (size_t i = 0; i < inputs.size(); ++i) {
    specs[i].id = "r" + std::to_string(i);
    specs[i].inputs = std::move(inputs[i]);
    specs[i].requested_outputs = {output};
    specs[i].record = l.session.NewRecord();
  }
  for (auto& s : specs) requests.push_back(s.Build());
  std::string e = Take(OperonHostExecute(l.instance, requests.data(), static_cast<uint32_t>(requests.size())));
  CHECK(e.empty(), "execute: " + e);
  CHECK(l.session.WaitAllDone(60000), "requests not released/answered");
  std::vector<host::Response> out;
  std::lock_guard<std::mutex> lock(l.session.mutex);
  for (auto& s : specs) {
    CHECK(s.record->responses.size() == 1, "one response per request");
    out.push_back(s.record->responses[0]);
  }
  l.session.records.clear();
  return out;
}

std::vector<float> Floats(const Tensor& t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

// ---- CPU half ----

void TestWeightsFile() {
  auto w = operon_cuda::RandomMlp({5, 3, 2}, 7);
  std::string dir = MlpDir(w), why;
  operon_cuda::MlpWeights back;
  CHECK(operon_cuda::ReadMlpWeights(dir + "/1/mlp.weights", &back, &why), why);
  CHECK(back.dims == w.dims && back.weights == w.weights && back.biases == w.biases, "round trip");
  std::string path = dir + "/1/mlp.weights";
  { std::ofstream f(path, std::ios::binary | std::ios::app); f << 'x'; }
  CHECK(!operon_cuda::ReadMlpWeights(path, &back, &why) && Has(why, "bytes after the last layer"), why);
  { std::ofstream f(path, std::ios::binary); f << "OPMLPW01"; uint32_t l = 1, d[2] = {4, 4}; f.write((char*)&l, 4); f.write((char*)d, 8); }
  CHECK(!operon_cuda::ReadMlpWeights(path, &back, &why) && Has(why, "truncated (layer 0 of 1)"), why);
  { std::ofstream f(path, std::ios::binary); f << "GGUF...."; }
  CHECK(!operon_cuda::ReadMlpWeights(path, &back, &why) && Has(why, "magic OPMLPW01"), why);
  CHECK(!operon_cuda::ReadMlpWeights(dir + "/none", &back, &why) && Has(why, "cannot open"), why);
}

void TestRounding() {
  CHECK(operon_cuda::RoundTo(Precision::kFp16, 1.0f + std::ldexp(1.0f, -11)) == 1.0f, "fp16 tie to even (down)");
  CHECK(operon_cuda::RoundTo(Precision::kFp16, 1.0f + 3 * std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -9), "fp16 tie to even (up)");
  CHECK(operon_cuda::RoundTo(Precision::kFp16, 65504.f) == 65504.f && std::isinf(operon_cuda::RoundTo(Precision::kFp16, 70000.f)), "fp16 range");
  CHECK(operon_cuda::RoundTo(Precision::kFp16, std::ldexp(1.0f, -24)) == std::ldexp(1.0f, -24), "fp16 subnormal");
  CHECK(operon_cuda::RoundTo(Precision::kBf16, 1.00390625f) == 1.0f && operon_cuda::RoundTo(Precision::kBf16, 1.01171875f) == 1.015625f, "bf16 ties to even");
}

void TestMlpReference() {
  operon_cuda::MlpWeights w;
  w.dims = {2, 2, 1};
  w.weights = {{1, -1, 2, 0.5f}, {1, 3}};
  w.biases = {{0, -10}, {0.25f}};
  float x[2] = {3, 1}, y = 0;
  // layer 0: [3 - 1, 6 + 0.5 - 10] = [2, -3.5] -> ReLU [2, 0]; layer 1: 2 + 0 + 0.25
  operon_cuda::MlpReference(w, Precision::kFp32, x, 1, &y);
  CHECK(y == 2.25f, "2-2-1 MLP by hand: got " + std::to_string(y));
}

void TestPreprocessReferenceMatchesCpuBackend() {
  std::mt19937 rng(1);
  const int shapes[][4] = {{2, 32, 100, 3}, {1, 96, 40, 4}, {3, 48, 400, 3}, {1, 1, 1, 3}};
  for (auto& s : shapes) {
    auto pixels = RandomPixels(rng, static_cast<size_t>(s[0]) * s[1] * s[2] * s[3]);
    std::vector<float> ref(static_cast<size_t>(s[0]) * 3 * 48 * 192);
    operon_cuda::PreprocessReference(pixels.data(), s[0], s[1], s[2], s[3], 48, 192, ref.data());
    Loaded l;
    Load(l, "operon_image_preprocess", TempDir(), "{\"name\":\"m\",\"backend\":\"operon_image_preprocess\",\"max_batch_size\":0}", OPERON_HOST_KIND_CPU, 0);
    CHECK(l.error.empty(), "load operon_image_preprocess: " + l.error);
    auto r = Run(l, {{MakeTensor<uint8_t>("pixels", "UINT8", {s[0], s[1], s[2], s[3]}, pixels)}}, "x");
    CHECK(!r[0].has_error, r[0].error_message);
    CHECK(Floats(r[0].outputs[0]) == ref, "reference == operon_image_preprocess for shape " + std::to_string(s[1]) + "x" + std::to_string(s[2]));
  }
}

void TestConfigErrors() {
  auto dir = MlpDir(operon_cuda::RandomMlp({4, 4}, 1));
  Loaded a;
  Load(a, "operon_cuda", dir, MlpConfig({{"precision", "fp8"}}), OPERON_HOST_KIND_GPU, 0);
  CHECK(Has(a.error, "parameters.precision': must be fp32, fp16 or bf16, got 'fp8'"), a.error);
  Loaded b;
  Load(b, "operon_cuda", dir, MlpConfig({{"streams", "3"}}), OPERON_HOST_KIND_GPU, 0);
  CHECK(Has(b.error, "parameters.streams': must be 1, 2 or 4"), b.error);
  Loaded c;
  Load(c, "operon_cuda", TempDir(), MlpConfig({}), OPERON_HOST_KIND_GPU, 0);
  CHECK(Has(c.error, "cannot open MLP weights file") && Has(c.error, "/1/mlp.weights"), c.error);
}

void TestCpuInstanceRefused() {
  Loaded l;
  Load(l, "operon_cuda", MlpDir(operon_cuda::RandomMlp({4, 4}, 1)), MlpConfig({}), OPERON_HOST_KIND_CPU, 0);
  CHECK(Has(l.error, "instance 'm_0' is KIND_CPU; this backend runs on GPUs only"), l.error);
}

// The CPU backend of the same step refuses a GPU instance rather than running it on the CPU.
void TestCpuPreprocessRefusesGpu() {
  Loaded l;
  Load(l, "operon_image_preprocess", TempDir(), "{\"name\":\"m\",\"backend\":\"operon_image_preprocess\",\"max_batch_size\":0}",
       OPERON_HOST_KIND_GPU, 0);
  CHECK(l.instance == nullptr && Has(l.error, "operon_image_preprocess: instance 'm_0' is KIND_GPU, but this backend runs on the CPU only: "
                                              "use instance_group { kind: KIND_CPU }"), l.error);
}

// The hint each refusal ends with: an old driver ("update the driver", both versions named) told apart from
// no driver at all (CUDA answers cudaErrorInsufficientDriver to both).
void TestRefusalHints() {
  std::string old_driver = operon_cuda::CudaErrorHint(operon_cuda::kCudaErrorInsufficientDriver, 13000, 12040);
  CHECK(old_driver == "; the NVIDIA driver supports CUDA 12.4, older than the CUDA runtime this backend was built with "
                      "(13.0): update the driver", old_driver);
  std::string no_driver = operon_cuda::CudaErrorHint(operon_cuda::kCudaErrorInsufficientDriver, 13000, 0);
  CHECK(Has(no_driver, "no NVIDIA driver is installed on this host (libcuda.so.1 cannot be loaded)") &&
        !Has(no_driver, "update the driver"), no_driver);
  CHECK(operon_cuda::CudaErrorHint(operon_cuda::kCudaErrorNoDevice, 13000, 13000) == "; this host has no CUDA device", "no device");
  CHECK(operon_cuda::CudaErrorHint(2, 13000, 13000).empty(), "other errors add nothing (cudaErrorMemoryAllocation)");
  CHECK(operon_cuda::CudaVersionString(13020) == "13.2", operon_cuda::CudaVersionString(13020));
}

bool HostHasCudaDriver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

// On a host without a usable GPU: the instance is refused with CUDA's reason and the hint, naming its device.
// (With a driver, --cpu-only on a GPU host: a device the host lacks is refused instead.)
void TestNoGpuRefused() {
  Loaded l;
  const bool driver = HostHasCudaDriver();
  Load(l, "operon_cuda", MlpDir(operon_cuda::RandomMlp({4, 4}, 1)), MlpConfig({}), OPERON_HOST_KIND_GPU, driver ? 99 : 1);
  if (driver) {
    CHECK(l.instance == nullptr && Has(l.error, "instance 'm_0' on GPU 99: operon_cuda: "), l.error);
    return;
  }
  CHECK(Has(l.error, "instance 'm_0' on GPU 1: operon_cuda: cudaGetDeviceCount(&count) failed: cudaErrorInsufficientDriver") &&
        Has(l.error, "no NVIDIA driver is installed on this host"), l.error);
}

// ---- GPU half ----

float Tolerance(Precision p) { return p == Precision::kFp32 ? 1e-4f : p == Precision::kFp16 ? 1e-2f : 6e-2f; }

void CheckMlp(Precision p, const char* name, int streams, std::vector<int> batches) {
  auto w = operon_cuda::RandomMlp({784, 512, 256, 10}, 3);
  auto dir = MlpDir(w);
  Loaded l;
  Load(l, "operon_cuda", dir, MlpConfig({{"precision", name}, {"streams", std::to_string(streams)}, {"chunk", "128"}}), OPERON_HOST_KIND_GPU, 0);
  CHECK(l.error.empty(), l.error);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::vector<Tensor>> inputs;
  std::vector<std::vector<float>> refs;
  for (int b : batches) {
    std::vector<float> x(static_cast<size_t>(b) * 784);
    for (auto& v : x) v = u(rng);
    refs.emplace_back(static_cast<size_t>(b) * 10);
    operon_cuda::MlpReference(w, p, x.data(), b, refs.back().data());
    inputs.push_back({MakeTensor<float>("x", "FP32", {b, 784}, x)});
  }
  auto r = Run(l, inputs, "y");
  for (size_t i = 0; i < batches.size(); ++i) {
    CHECK(!r[i].has_error, r[i].error_message);
    auto y = Floats(r[i].outputs[0]);
    CHECK(y.size() == refs[i].size(), "output size");
    float worst = 0;
    for (size_t k = 0; k < y.size(); ++k) worst = std::max(worst, std::fabs(y[k] - refs[i][k]) / (1.f + std::fabs(refs[i][k])));
    CHECK(worst <= Tolerance(p), std::string(name) + " batch " + std::to_string(batches[i]) + ": worst relative error " + std::to_string(worst));
  }
}

void TestMlpGpu() {
  for (int streams : {1, 2, 4}) {
    CheckMlp(Precision::kFp32, "fp32", streams, {1, 7, 300});
    CheckMlp(Precision::kFp16, "fp16", streams, {1, 130, 257});
    CheckMlp(Precision::kBf16, "bf16", streams, {3, 200});
  }
}

void TestPreprocessGpu() {
  std::mt19937 rng(2);
  const int shapes[][4] = {{70, 32, 100, 3}, {5, 96, 40, 4}, {3, 48, 400, 3}, {1, 1, 1, 3}};
  for (int streams : {1, 2, 4}) {
    for (auto& s : shapes) {
      auto pixels = RandomPixels(rng, static_cast<size_t>(s[0]) * s[1] * s[2] * s[3]);
      std::vector<float> ref(static_cast<size_t>(s[0]) * 3 * 48 * 192);
      operon_cuda::PreprocessReference(pixels.data(), s[0], s[1], s[2], s[3], 48, 192, ref.data());
      Loaded l;
      Load(l, "operon_cuda", TempDir(), "{\"name\":\"m\",\"backend\":\"operon_cuda\",\"max_batch_size\":0," +
           Params({{"operation", "preprocess"}, {"streams", std::to_string(streams)}, {"chunk", "16"}}) + "}", OPERON_HOST_KIND_GPU, 0);
      CHECK(l.error.empty(), l.error);
      auto r = Run(l, {{MakeTensor<uint8_t>("pixels", "UINT8", {s[0], s[1], s[2], s[3]}, pixels)}}, "x");
      CHECK(!r[0].has_error, r[0].error_message);
      CHECK(Floats(r[0].outputs[0]) == ref, "GPU preprocessing == reference, shape " + std::to_string(s[1]) + "x" + std::to_string(s[2]));
    }
  }
}

void TestBadRequestFailsAlone() {
  Loaded l;
  Load(l, "operon_cuda", MlpDir(operon_cuda::RandomMlp({8, 4}, 9)), MlpConfig({{"precision", "fp32"}}), OPERON_HOST_KIND_GPU, 0);
  CHECK(l.error.empty(), l.error);
  auto r = Run(l, {{MakeTensor<float>("x", "FP32", {1, 8}, std::vector<float>(8, 1))}, {MakeTensor<float>("x", "FP32", {1, 5}, std::vector<float>(5, 1))}}, "y");
  CHECK(!r[0].has_error && r[1].has_error && Has(r[1].error_message, "input 'x' must be FP32 [N, 8]"), r[1].error_message);
}

// One request through `l` whose outputs the host keeps on GPU `keep_on_device` (-1: host memory); its response.
host::Response RunPlanned(Loaded& l, Tensor input, const std::string& output, int32_t keep_on_device) {
  std::vector<RequestSpec> specs(1);
  specs[0].inputs.push_back(std::move(input));
  specs[0].requested_outputs = {output};
  specs[0].record = l.session.NewRecord();
  specs[0].record->keep_on_device = keep_on_device;
  std::vector<OperonHostRequest> requests{specs[0].Build()};
  std::string e = Take(OperonHostExecute(l.instance, requests.data(), 1));
  CHECK(e.empty(), "execute: " + e);
  CHECK(l.session.WaitAllDone(60000), "request not released/answered");
  std::lock_guard<std::mutex> lock(l.session.mutex);
  CHECK(specs[0].record->responses.size() == 1, "one response");
  host::Response r = specs[0].record->responses[0];
  l.session.records.clear();
  CHECK(!r.has_error, r.error_message);
  return r;
}

// preprocess -> MLP on one GPU, as an operator whose steps are both operon_cuda: the preprocessed tensor stays in
// the library's device pool (the host asks for it there), the MLP reads it in place, and its answer is the reference.
void TestDeviceTensorBetweenSteps() {
  std::mt19937 rng(4);
  const int n = 5, h = 32, w = 100;
  auto pixels = RandomPixels(rng, static_cast<size_t>(n) * h * w * 3);
  std::vector<float> x(static_cast<size_t>(n) * 3 * 48 * 192);
  operon_cuda::PreprocessReference(pixels.data(), n, h, w, 3, 48, 192, x.data());
  auto weights = operon_cuda::RandomMlp({3 * 48 * 192, 64, 10}, 6);
  std::vector<float> ref(static_cast<size_t>(n) * 10);
  operon_cuda::MlpReference(weights, Precision::kFp32, x.data(), n, ref.data());
  Loaded pre, mlp;
  Load(pre, "operon_cuda", TempDir(), "{\"name\":\"m\",\"backend\":\"operon_cuda\",\"max_batch_size\":0," +
       Params({{"operation", "preprocess"}, {"chunk", "2"}}) + "}", OPERON_HOST_KIND_GPU, 0);
  CHECK(pre.error.empty(), pre.error);
  Load(mlp, "operon_cuda", MlpDir(weights), MlpConfig({{"precision", "fp32"}, {"chunk", "2"}}), OPERON_HOST_KIND_GPU, 0);
  CHECK(mlp.error.empty(), mlp.error);
  for (int32_t last_plan : {-1, 0}) {
    host::Response a = RunPlanned(pre, MakeTensor<uint8_t>("pixels", "UINT8", {n, h, w, 3}, pixels), "x", 0);
    Tensor between = a.outputs.at(0);
    CHECK(between.memory_type == OPERON_HOST_MEMORY_GPU && between.device == 0, "the preprocessed tensor stayed on GPU 0");
    std::vector<float> seen(x.size());
    CHECK(Take(OperonHostDeviceCopyToHost(0, seen.data(), between.device_base, between.device_bytes)).empty() && seen == x,
          "the device tensor == the preprocessing reference");
    host::Response b = RunPlanned(mlp, between, "y", last_plan);
    CHECK(Take(OperonHostDeviceFree(0, between.device_base)).empty(), "the intermediate region goes back to the pool");
    const Tensor& y = b.outputs.at(0);
    std::vector<float> got(ref.size());
    if (last_plan < 0) {
      CHECK(y.memory_type == OPERON_HOST_MEMORY_CPU, "host memory for the client");
      got = Floats(y);
    } else {
      CHECK(y.memory_type == OPERON_HOST_MEMORY_GPU, "the MLP's output stayed on the device");
      CHECK(Take(OperonHostDeviceCopyToHost(0, got.data(), y.device_base, y.device_bytes)).empty(), "copy the answer");
      CHECK(Take(OperonHostDeviceFree(0, y.device_base)).empty(), "free the answer's region");
    }
    float worst = 0;
    for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::fabs(got[k] - ref[k]) / (1.f + std::fabs(ref[k])));
    CHECK(worst <= Tolerance(Precision::kFp32), "MLP on the device tensor: worst relative error " + std::to_string(worst));
  }
  OperonHostDevicePoolStatistics pool{};
  OperonHostDevicePoolGetStatistics(0, &pool);
  CHECK(pool.live_regions == 0, "every region back in the pool");
  CHECK(Take(OperonHostDevicePoolTrim(0)).empty(), "trim the pool");
}

void TestMissingDeviceRefused() {
  Loaded l;
  Load(l, "operon_cuda", MlpDir(operon_cuda::RandomMlp({4, 4}, 1)), MlpConfig({}), OPERON_HOST_KIND_GPU, 99);
  CHECK(Has(l.error, "GPU 99 does not exist"), l.error);
}

int RunTests(const std::vector<std::pair<std::string, std::function<void()>>>& tests) {
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

// ---- bench ----

double Seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double Param(const host::Response& r, const std::string& name) {
  for (auto& p : r.parameters) if (p.first == name) return std::stod(p.second);
  return 0;
}

std::string PreprocessConfig(int streams, int chunk) {
  return "{\"name\":\"m\",\"backend\":\"operon_cuda\",\"max_batch_size\":0," +
         Params({{"operation", "preprocess"}, {"streams", std::to_string(streams)}, {"chunk", std::to_string(chunk)}}) + "}";
}

// Executions submitted without waiting for their responses (operon_cuda answers from its completion thread), as
// a worker with several executions in flight does; the specs live until WaitAll.
class InFlight {
 public:
  explicit InFlight(Loaded& l) : l_(l) {}
  ~InFlight() {
    try {
      WaitAll();
    } catch (const Failure&) {  // a failed bench run already says why
    }
  }
  host::RequestRecord* Submit(const std::vector<Tensor>& inputs, const std::string& output) {
    auto spec = std::make_unique<RequestSpec>();
    spec->id = "r" + std::to_string(specs_.size());
    spec->inputs = inputs;
    spec->requested_outputs = {output};
    spec->record = l_.session.NewRecord();
    OperonHostRequest request = spec->Build();
    std::string e = Take(OperonHostExecute(l_.instance, &request, 1));
    CHECK(e.empty(), "execute: " + e);
    specs_.push_back(std::move(spec));
    return specs_.back()->record;
  }
  // The named output of a submitted request, once its response is in (as the next step's input).
  std::vector<Tensor> Output(host::RequestRecord* r, const std::string& name) {
    CHECK(l_.session.WaitResponses(r, 1, 60000), "no response within 60 s");
    std::lock_guard<std::mutex> lock(l_.session.mutex);
    CHECK(!r->responses[0].has_error, r->responses[0].error_message);
    for (auto& t : r->responses[0].outputs)
      if (t.name == name) return {t};
    throw Failure{"no output '" + name + "'"};
  }
  void WaitAll() {
    if (specs_.empty()) return;
    CHECK(l_.session.WaitAllDone(120000), "requests not released/answered within 120 s");
    std::lock_guard<std::mutex> lock(l_.session.mutex);
    for (auto& r : l_.session.records) CHECK(!r->responses.empty() && !r->responses[0].has_error, r->responses.empty() ? "no response" : r->responses[0].error_message);
    l_.session.records.clear();
    specs_.clear();
  }

 private:
  Loaded& l_;
  std::vector<std::unique_ptr<RequestSpec>> specs_;
};

// Consecutive executions overlap (operon_cuda answers from its completion thread): several in flight at once,
// on 1, 2 and 4 streams, each request still gets its own output, equal to the reference.
void TestExecutionsInFlight() {
  auto w = operon_cuda::RandomMlp({784, 256, 10}, 8);
  auto dir = MlpDir(w);
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int streams : {1, 2, 4}) {
    Loaded l;
    Load(l, "operon_cuda", dir, MlpConfig({{"precision", "fp32"}, {"streams", std::to_string(streams)}, {"chunk", "64"}}), OPERON_HOST_KIND_GPU, 0);
    CHECK(l.error.empty(), l.error);
    std::vector<std::vector<float>> refs;
    std::vector<host::RequestRecord*> records;
    {
      InFlight f(l);
      for (int k = 0; k < 6; ++k) {
        const int rows = 50 + 37 * k;
        std::vector<float> x(static_cast<size_t>(rows) * 784);
        for (auto& v : x) v = u(rng);
        refs.emplace_back(static_cast<size_t>(rows) * 10);
        operon_cuda::MlpReference(w, Precision::kFp32, x.data(), rows, refs.back().data());
        records.push_back(f.Submit({MakeTensor<float>("x", "FP32", {rows, 784}, x)}, "y"));
      }
      for (size_t k = 0; k < records.size(); ++k) {
        auto y = Floats(f.Output(records[k], "y")[0]);
        CHECK(y.size() == refs[k].size(), "output size of execution " + std::to_string(k));
        for (size_t i = 0; i < y.size(); ++i)
          CHECK(std::fabs(y[i] - refs[k][i]) / (1.f + std::fabs(refs[k][i])) <= Tolerance(Precision::kFp32),
                "execution " + std::to_string(k) + ", " + std::to_string(streams) + " stream(s): value " + std::to_string(i));
      }
    }
  }
}

}  // namespace

int CudaSelfTest(const std::string& build, bool cpu_only) {
  g_build = build;
  std::vector<std::pair<std::string, std::function<void()>>> tests = {
      {"MLP weights file: round trip and each refusal", TestWeightsFile},
      {"FP16/BF16 rounding (ties to even, range, subnormals)", TestRounding},
      {"MLP reference on a 2-2-1 MLP worked by hand", TestMlpReference},
      {"preprocessing reference == operon_image_preprocess", TestPreprocessReferenceMatchesCpuBackend},
      {"operon_cuda config errors name the field (precision, streams, weights file)", TestConfigErrors},
      {"operon_cuda refuses a KIND_CPU instance", TestCpuInstanceRefused},
      {"operon_image_preprocess refuses a KIND_GPU instance (operon_cuda's preprocess is the GPU one)", TestCpuPreprocessRefusesGpu},
      {"CUDA refusal hints: an old driver says 'update the driver', a missing one says install it", TestRefusalHints},
  };
  if (cpu_only) {
    tests.push_back({"operon_cuda refuses a KIND_GPU instance on a host without a usable GPU, naming CUDA's error", TestNoGpuRefused});
  } else {
    tests.push_back({"MLP FP32/FP16/BF16 == reference, 1/2/4 streams, batches across chunks", TestMlpGpu});
    tests.push_back({"preprocessing kernel == reference (exact), 1/2/4 streams", TestPreprocessGpu});
    tests.push_back({"executions in flight at once (consecutive batches overlap) each get their own outputs", TestExecutionsInFlight});
    tests.push_back({"a bad request in a batch fails alone", TestBadRequestFailsAlone});
    tests.push_back({"a GPU the host lacks is refused", TestMissingDeviceRefused});
    tests.push_back({"preprocess -> MLP with the intermediate tensor kept on the GPU (device pool, GPU inputs and outputs)",
                     TestDeviceTensorBetweenSteps});
  }
  return RunTests(tests);
}

int CudaBench(const std::string& build) {
  g_build = build;
  std::mt19937 rng(11);
  try {
    // Preprocessing kernel bandwidth: 48x160 RGB images (every input pixel is read), bytes in + out.
    {
      const int n = 2048, h = 48, w = 160;
      auto pixels = RandomPixels(rng, static_cast<size_t>(n) * h * w * 3);
      Loaded l;
      Load(l, "operon_cuda", TempDir(), "{\"name\":\"m\",\"backend\":\"operon_cuda\",\"max_batch_size\":0," +
           Params({{"operation", "preprocess"}, {"streams", "1"}, {"chunk", "2048"}, {"timing", "true"}}) + "}", OPERON_HOST_KIND_GPU, 0);
      CHECK(l.error.empty(), l.error);
      double best = 1e30;
      for (int k = 0; k < 20; ++k) {
        auto r = Run(l, {{MakeTensor<uint8_t>("pixels", "UINT8", {n, h, w, 3}, pixels)}}, "x");
        best = std::min(best, Param(r[0], "operon_cuda_kernel_us"));
      }
      double bytes = static_cast<double>(n) * h * w * 3 + static_cast<double>(n) * 3 * 48 * 192 * 4;
      std::printf("## Preprocessing kernel\n\n| images | bytes read+written | best kernel time | bandwidth | of 4.8 TB/s |\n|---|---|---|---|---|\n");
      std::printf("| %d x 48x160 RGB | %.1f MB | %.1f us | %.2f TB/s | %.0f %% |\n\n", n, bytes / 1e6, best, bytes / best / 1e6, 100 * bytes / best / 1e6 / 4.8);
    }
    // MLP 784-2048-2048-10: kernel throughput (compute only) by batch and precision.
    auto w = operon_cuda::RandomMlp({784, 2048, 2048, 10}, 4);
    auto dir = MlpDir(w);
    std::printf("## MLP 784-2048-2048-10 (operon_cuda kernels, compute only)\n\n| precision | batch | best kernel time | rows/s | TFLOP/s |\n|---|---|---|---|---|\n");
    for (const char* p : {"fp32", "fp16", "bf16"}) {
      Loaded l;
      Load(l, "operon_cuda", dir, MlpConfig({{"precision", p}, {"streams", "1"}, {"chunk", "16384"}, {"timing", "true"}}), OPERON_HOST_KIND_GPU, 0);
      CHECK(l.error.empty(), l.error);
      for (int b : {256, 1024, 4096, 16384}) {
        std::vector<float> x(static_cast<size_t>(b) * 784, 0.5f);
        double best = 1e30;
        for (int k = 0; k < 10; ++k) best = std::min(best, Param(Run(l, {{MakeTensor<float>("x", "FP32", {b, 784}, x)}}, "y")[0], "operon_cuda_kernel_us"));
        double flops = 2.0 * b * (784.0 * 2048 + 2048.0 * 2048 + 2048.0 * 10);
        std::printf("| %s | %d | %.1f us | %.0f | %.1f |\n", p, b, best, b / best * 1e6, flops / best / 1e6);
      }
    }
    // Streams, one step: executions submitted back to back (as a worker keeps several in flight), wall time
    // for all of them, copies included: chunks overlap within an execution and across consecutive ones.
    std::printf("\n## Streams, one step (wall time, copies included, 8 executions in flight)\n\n| step | streams | items/s | vs 1 stream |\n|---|---|---|---|\n");
    for (int step = 0; step < 2; ++step) {
      double one = 0;
      for (int streams : {1, 2, 4}) {
        Loaded l;
        std::vector<Tensor> in;
        if (step == 0) {
          Load(l, "operon_cuda", TempDir(), PreprocessConfig(streams, 128), OPERON_HOST_KIND_GPU, 0);
          in = {MakeTensor<uint8_t>("pixels", "UINT8", {512, 48, 160, 3}, RandomPixels(rng, 512ull * 48 * 160 * 3))};
        } else {
          Load(l, "operon_cuda", dir, MlpConfig({{"precision", "fp16"}, {"streams", std::to_string(streams)}, {"chunk", "1024"}}), OPERON_HOST_KIND_GPU, 0);
          in = {MakeTensor<float>("x", "FP32", {4096, 784}, std::vector<float>(4096ull * 784, 0.25f))};
        }
        CHECK(l.error.empty(), l.error);
        const char* out = step == 0 ? "x" : "y";
        Run(l, {in}, out);  // warm-up (buffers allocated)
        const int reps = 8;
        InFlight f(l);
        auto t = std::chrono::steady_clock::now();
        for (int k = 0; k < reps; ++k) f.Submit(in, out);
        f.WaitAll();
        double rate = (step == 0 ? 512.0 : 4096.0) * reps / Seconds(t);
        if (streams == 1) one = rate;
        std::printf("| %s | %d | %.0f | %.2fx |\n", step == 0 ? "preprocess 512 images, chunks of 128" : "MLP fp16 4096 rows, chunks of 1024", streams, rate, rate / one);
      }
    }
    // The preprocessing -> MLP pipeline where copies dominate: images in (UINT8), preprocessed back to the host
    // (as a worker hands one step's output to the next) and into an MLP 27648-256-10 fp16 (27648 = 3 x 48 x 192),
    // whose first layer's input is 110 KB a row. Both instances have `streams` streams; the next batch's
    // preprocessing runs while the MLP takes the previous one.
    {
      std::printf("\n## Pipeline: preprocess -> MLP 27648-256-10 fp16 (copies dominate), 16 batches of 256 images\n\n| pipeline | streams | images/s | vs 1 stream |\n|---|---|---|---|\n");
      auto wide = operon_cuda::RandomMlp({3 * 48 * 192, 256, 10}, 6);
      auto wide_dir = MlpDir(wide);
      const int batch = 256, batches = 16;
      std::vector<std::vector<Tensor>> images;
      for (int k = 0; k < batches; ++k)
        images.push_back({MakeTensor<uint8_t>("pixels", "UINT8", {batch, 48, 160, 3}, RandomPixels(rng, static_cast<size_t>(batch) * 48 * 160 * 3))});
      double one = 0;
      for (int streams : {1, 2, 4}) {
        Loaded pre, mlp;
        Load(pre, "operon_cuda", TempDir(), PreprocessConfig(streams, 64), OPERON_HOST_KIND_GPU, 0);
        CHECK(pre.error.empty(), pre.error);
        Load(mlp, "operon_cuda", wide_dir, MlpConfig({{"precision", "fp16"}, {"streams", std::to_string(streams)}, {"chunk", "64"}}), OPERON_HOST_KIND_GPU, 0);
        CHECK(mlp.error.empty(), mlp.error);
        auto pass = [&](int count) {
          InFlight p(pre), m(mlp);
          std::vector<host::RequestRecord*> sent;
          for (int k = 0; k < count; ++k) {
            sent.push_back(p.Submit(images[k], "x"));
            if (k > 0) m.Submit(p.Output(sent[k - 1], "x"), "y");
          }
          m.Submit(p.Output(sent.back(), "x"), "y");
          m.WaitAll();
          p.WaitAll();
        };
        pass(2);  // warm-up (buffers allocated)
        auto t = std::chrono::steady_clock::now();
        pass(batches);
        double rate = static_cast<double>(batch) * batches / Seconds(t);
        if (streams == 1) one = rate;
        std::printf("| preprocess -> MLP | %d | %.0f | %.2fx |\n", streams, rate, rate / one);
      }
    }
  } catch (const Failure& f) {
    std::printf("bench failed: %s\n", f.what.c_str());
    return 1;
  }
  return 0;
}
