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
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>

#include "cuda-reference.h"
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

// On a host without a usable GPU: the instance is refused with CUDA's reason, naming its device.
void TestNoGpuRefused() {
  Loaded l;
  Load(l, "operon_cuda", MlpDir(operon_cuda::RandomMlp({4, 4}, 1)), MlpConfig({}), OPERON_HOST_KIND_GPU, 1);
  CHECK(Has(l.error, "instance 'm_0' on GPU 1: operon_cuda: cudaGetDeviceCount(&count) failed: cudaError"), l.error);
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
  };
  if (cpu_only) {
    tests.push_back({"operon_cuda refuses a KIND_GPU instance on a host without a usable GPU, naming CUDA's error", TestNoGpuRefused});
  } else {
    tests.push_back({"MLP FP32/FP16/BF16 == reference, 1/2/4 streams, batches across chunks", TestMlpGpu});
    tests.push_back({"preprocessing kernel == reference (exact), 1/2/4 streams", TestPreprocessGpu});
    tests.push_back({"a bad request in a batch fails alone", TestBadRequestFailsAlone});
    tests.push_back({"a GPU the host lacks is refused", TestMissingDeviceRefused});
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
    // Streams: the whole pipeline per execution (staging, H2D, kernels, D2H), wall time.
    std::printf("\n## Streams (wall time per execution, copies included)\n\n| step | streams | items/s | vs 1 stream |\n|---|---|---|---|\n");
    for (int step = 0; step < 2; ++step) {
      double one = 0;
      for (int streams : {1, 2, 4}) {
        Loaded l;
        std::vector<Tensor> in;
        if (step == 0) {
          Load(l, "operon_cuda", TempDir(), "{\"name\":\"m\",\"backend\":\"operon_cuda\",\"max_batch_size\":0," +
               Params({{"operation", "preprocess"}, {"streams", std::to_string(streams)}, {"chunk", "128"}}) + "}", OPERON_HOST_KIND_GPU, 0);
          in = {MakeTensor<uint8_t>("pixels", "UINT8", {2048, 48, 160, 3}, RandomPixels(rng, 2048ull * 48 * 160 * 3))};
        } else {
          Load(l, "operon_cuda", dir, MlpConfig({{"precision", "fp16"}, {"streams", std::to_string(streams)}, {"chunk", "1024"}}), OPERON_HOST_KIND_GPU, 0);
          in = {MakeTensor<float>("x", "FP32", {16384, 784}, std::vector<float>(16384ull * 784, 0.25f))};
        }
        CHECK(l.error.empty(), l.error);
        Run(l, {in}, step == 0 ? "x" : "y");  // warm-up (buffers allocated)
        auto t = std::chrono::steady_clock::now();
        const int reps = 10;
        for (int k = 0; k < reps; ++k) Run(l, {in}, step == 0 ? "x" : "y");
        double rate = (step == 0 ? 2048.0 : 16384.0) * reps / Seconds(t);
        if (streams == 1) one = rate;
        std::printf("| %s | %d | %.0f | %.2fx |\n", step == 0 ? "preprocess 2048 images, chunks of 128" : "MLP fp16 16384 rows, chunks of 1024", streams, rate, rate / one);
      }
    }
  } catch (const Failure& f) {
    std::printf("bench failed: %s\n", f.what.c_str());
    return 1;
  }
  return 0;
}
