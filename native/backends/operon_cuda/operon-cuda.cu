// operon_cuda: a CUDA backend written against Triton's backend API only.
// One model config parameter picks the operation:
//
//   operation "mlp"         input "x" FP32 [N, d0] -> output "y" FP32 [N, dL]: the MLP
//                           whose weights are in <version folder>/<weights> (default
//                           mlp.weights, format in cuda-reference.h), in precision
//                           fp32 | fp16 | bf16 (parameter `precision`, default fp16)
//   operation "preprocess"  input "pixels" UINT8 [N, H, W, 3|4] -> output "x" FP32
//                           [N, 3, height, width]: operon_image_preprocess's contract
//
// Instances must be KIND_GPU (a CUDA backend never runs on the CPU instead);
// each instance owns `streams` CUDA streams (1, 2 or 4; default 2), each with
// its own pinned host staging buffers and device buffers. A request's rows
// are cut into chunks (`chunk`, default 256 rows for mlp, 64 images for
// preprocess) dealt to the streams in turn: while one stream's chunk is in
// its host-to-device copy, another's computes and a third's copies back, and
// the CPU stages the next chunk's input (shared memory -> pinned) meanwhile.
// Parameter `timing` "true" adds each response's GPU kernel time (cudaEvents,
// microseconds) as the response parameter `operon_cuda_kernel_us`.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda-kernels.h"
#include "cuda-reference.h"
#include "backend-model-config.h"
#include "json-value.h"
#include "triton/core/tritonbackend.h"

namespace {

using operon_cuda::DType;

#define RETURN_IF_ERROR(expr)           \
  do {                                  \
    TRITONSERVER_Error* err__ = (expr); \
    if (err__ != nullptr) return err__; \
  } while (false)

TRITONSERVER_Error* Error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, ("operon_cuda: " + message).c_str());
}

// A CUDA call's failure as an error naming the call and CUDA's error.
TRITONSERVER_Error* CudaError(cudaError_t e, const char* what) {
  std::string why = std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (e == cudaErrorInsufficientDriver)
    why += "; the NVIDIA driver is older than the CUDA runtime this backend was built with (" +
           std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) + "): update the driver";
  if (e == cudaErrorNoDevice) why += "; this host has no CUDA device";
  return Error(e == cudaErrorMemoryAllocation ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL, why);
}
#define CUDA_RETURN(call)                          \
  do {                                             \
    cudaError_t e__ = (call);                      \
    if (e__ != cudaSuccess) return CudaError(e__, #call); \
  } while (false)

enum class Operation { kMlp, kPreprocess };

struct ModelState {
  Operation op = Operation::kMlp;
  DType dtype = DType::kFp16;
  int streams = 2;
  int chunk = 0;
  bool timing = false;
  int height = 48, width = 192;  // preprocess
  operon_cuda::MlpWeights weights;  // mlp
};

size_t DTypeSize(DType t) { return t == DType::kFp32 ? 4 : 2; }

// A growable device or pinned host buffer.
struct Buffer {
  void* p = nullptr;
  size_t bytes = 0;
  bool pinned = false;
  TRITONSERVER_Error* Reserve(size_t want) {
    if (want <= bytes) return nullptr;
    Release();
    cudaError_t e = pinned ? cudaHostAlloc(&p, want, cudaHostAllocDefault) : cudaMalloc(&p, want);
    if (e != cudaSuccess) { p = nullptr; return CudaError(e, pinned ? "cudaHostAlloc" : "cudaMalloc"); }
    bytes = want;
    return nullptr;
  }
  void Release() {
    if (p != nullptr) pinned ? cudaFreeHost(p) : cudaFree(p);
    p = nullptr;
    bytes = 0;
  }
};

// One stream's resources and the chunk it is working on.
struct Slot {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  Buffer host_in{nullptr, 0, true}, host_out{nullptr, 0, true};
  Buffer dev_in, dev_a, dev_b, dev_out;
  // The chunk in flight: where its output goes once the stream finishes.
  void* pending_dst = nullptr;
  size_t pending_bytes = 0;
  double* kernel_us = nullptr;
};

struct InstanceState {
  int device = 0;
  std::vector<Slot> slots;
  std::vector<void*> dev_weights;  // per layer, in the model's dtype
  std::vector<float*> dev_bias;
  size_t next = 0;  // the slot the next chunk goes to
};

TRITONSERVER_Error* IntParameter(const operon_json::Value& config, const char* key, int lo, int hi, int* out) {
  const std::string* v = operon_json::ConfigParameter(config, key);
  if (v == nullptr) return nullptr;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < lo || n > hi)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("invalid config field 'parameters.") + key + "': must be an integer from " +
                                                     std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + *v + "'");
  *out = static_cast<int>(n);
  return nullptr;
}

TRITONSERVER_Error* ParseModel(TRITONBACKEND_Model* model, ModelState* s) {
  std::string text;
  RETURN_IF_ERROR(operon_backend::ModelConfigJson(model, &text));
  operon_json::Value config;
  std::string why;
  if (!operon_json::Parse(text, &config, &why)) return Error(TRITONSERVER_ERROR_INVALID_ARG, "bad model config: " + why);
  const std::string* op = operon_json::ConfigParameter(config, "operation");
  if (op == nullptr || *op == "mlp") s->op = Operation::kMlp;
  else if (*op == "preprocess") s->op = Operation::kPreprocess;
  else return Error(TRITONSERVER_ERROR_INVALID_ARG, "invalid config field 'parameters.operation': must be \"mlp\" or \"preprocess\", got '" + *op + "'");
  const std::string* precision = operon_json::ConfigParameter(config, "precision");
  if (precision == nullptr || *precision == "fp16") s->dtype = DType::kFp16;
  else if (*precision == "fp32") s->dtype = DType::kFp32;
  else if (*precision == "bf16") s->dtype = DType::kBf16;
  else return Error(TRITONSERVER_ERROR_INVALID_ARG, "invalid config field 'parameters.precision': must be fp32, fp16 or bf16, got '" + *precision + "'");
  RETURN_IF_ERROR(IntParameter(config, "streams", 1, 4, &s->streams));
  if (s->streams == 3) return Error(TRITONSERVER_ERROR_INVALID_ARG, "invalid config field 'parameters.streams': must be 1, 2 or 4, got '3'");
  s->chunk = s->op == Operation::kMlp ? 256 : 64;
  RETURN_IF_ERROR(IntParameter(config, "chunk", 1, 1 << 20, &s->chunk));
  RETURN_IF_ERROR(IntParameter(config, "height", 1, 4096, &s->height));
  RETURN_IF_ERROR(IntParameter(config, "width", 1, 4096, &s->width));
  const std::string* timing = operon_json::ConfigParameter(config, "timing");
  s->timing = timing != nullptr && *timing == "true";
  if (s->op == Operation::kMlp) {
    const char* repository;
    TRITONBACKEND_ArtifactType type;
    RETURN_IF_ERROR(TRITONBACKEND_ModelRepository(model, &type, &repository));
    uint64_t version;
    RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(model, &version));
    const std::string* file = operon_json::ConfigParameter(config, "weights");
    std::string name = file != nullptr ? *file : "mlp.weights";
    if (name.find('/') != std::string::npos || name == "..")
      return Error(TRITONSERVER_ERROR_INVALID_ARG, "parameters.weights must be a file name in the version folder, got '" + name + "'");
    std::string path = std::string(repository) + "/" + std::to_string(version) + "/" + name;
    if (!operon_cuda::ReadMlpWeights(path, &s->weights, &why)) return Error(TRITONSERVER_ERROR_INVALID_ARG, why);
  }
  return nullptr;
}

void FreeInstance(InstanceState* st) {
  cudaSetDevice(st->device);
  for (Slot& s : st->slots) {
    if (s.stream != nullptr) cudaStreamSynchronize(s.stream), cudaStreamDestroy(s.stream);
    if (s.start != nullptr) cudaEventDestroy(s.start);
    if (s.stop != nullptr) cudaEventDestroy(s.stop);
    for (Buffer* b : {&s.host_in, &s.host_out, &s.dev_in, &s.dev_a, &s.dev_b, &s.dev_out}) b->Release();
  }
  for (void* p : st->dev_weights) cudaFree(p);
  for (float* p : st->dev_bias) cudaFree(p);
  delete st;
}

TRITONSERVER_Error* InitInstance(const ModelState& m, InstanceState* st) {
  int count = 0;
  CUDA_RETURN(cudaGetDeviceCount(&count));
  if (st->device < 0 || st->device >= count)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "GPU " + std::to_string(st->device) + " does not exist (this host has " +
                                                     std::to_string(count) + " CUDA device(s))");
  CUDA_RETURN(cudaSetDevice(st->device));
  st->slots.resize(m.streams);
  for (Slot& s : st->slots) {
    CUDA_RETURN(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    CUDA_RETURN(cudaEventCreate(&s.start));
    CUDA_RETURN(cudaEventCreate(&s.stop));
  }
  if (m.op == Operation::kMlp) {
    const auto& w = m.weights;
    for (size_t l = 0; l < w.weights.size(); ++l) {
      const std::vector<float>& f = w.weights[l];
      void* dw = nullptr;
      float* db = nullptr;
      CUDA_RETURN(cudaMalloc(&dw, f.size() * DTypeSize(m.dtype)));
      st->dev_weights.push_back(dw);
      CUDA_RETURN(cudaMalloc(reinterpret_cast<void**>(&db), w.biases[l].size() * sizeof(float)));
      st->dev_bias.push_back(db);
      CUDA_RETURN(cudaMemcpy(db, w.biases[l].data(), w.biases[l].size() * sizeof(float), cudaMemcpyHostToDevice));
      // Upload FP32, convert on the device (round to nearest, as RoundTo does).
      float* tmp = nullptr;
      CUDA_RETURN(cudaMalloc(reinterpret_cast<void**>(&tmp), f.size() * sizeof(float)));
      cudaError_t e = cudaMemcpy(tmp, f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice);
      if (e == cudaSuccess) e = operon_cuda::LaunchConvert(m.dtype, tmp, dw, f.size(), st->slots[0].stream);
      if (e == cudaSuccess) e = cudaStreamSynchronize(st->slots[0].stream);
      cudaFree(tmp);
      if (e != cudaSuccess) return CudaError(e, "uploading the MLP weights");
    }
  }
  return nullptr;
}

// Waits for a slot's chunk and copies its output from pinned memory to its destination.
TRITONSERVER_Error* Drain(const ModelState& m, Slot& s) {
  if (s.pending_dst == nullptr) return nullptr;
  CUDA_RETURN(cudaStreamSynchronize(s.stream));
  std::memcpy(s.pending_dst, s.host_out.p, s.pending_bytes);
  if (m.timing && s.kernel_us != nullptr) {
    float ms = 0;
    cudaEventElapsedTime(&ms, s.start, s.stop);
    *s.kernel_us += ms * 1000.0;
  }
  s.pending_dst = nullptr;
  return nullptr;
}

// Enqueues one chunk: `rows` rows of `in_row` bytes at src, `out_row` bytes each to dst.
TRITONSERVER_Error* Enqueue(const ModelState& m, InstanceState& st, const void* src, size_t rows, size_t in_row,
                            void* dst, size_t out_row, int h, int w, int c, double* kernel_us) {
  Slot& s = st.slots[st.next];
  st.next = (st.next + 1) % st.slots.size();
  RETURN_IF_ERROR(Drain(m, s));
  const size_t in_bytes = rows * in_row, out_bytes = rows * out_row;
  RETURN_IF_ERROR(s.host_in.Reserve(in_bytes));
  RETURN_IF_ERROR(s.host_out.Reserve(out_bytes));
  RETURN_IF_ERROR(s.dev_in.Reserve(in_bytes));
  RETURN_IF_ERROR(s.dev_out.Reserve(out_bytes));
  std::memcpy(s.host_in.p, src, in_bytes);  // shared memory -> pinned (the copy engine reads only pinned memory at full speed)
  CUDA_RETURN(cudaMemcpyAsync(s.dev_in.p, s.host_in.p, in_bytes, cudaMemcpyHostToDevice, s.stream));
  if (m.timing) CUDA_RETURN(cudaEventRecord(s.start, s.stream));
  const int n = static_cast<int>(rows);
  if (m.op == Operation::kPreprocess) {
    CUDA_RETURN(operon_cuda::LaunchPreprocess(static_cast<const uint8_t*>(s.dev_in.p), n, h, w, c, m.height, m.width,
                                              static_cast<float*>(s.dev_out.p), s.stream));
  } else {
    const auto& dims = m.weights.dims;
    size_t widest = 0;
    for (uint32_t d : dims) widest = std::max<size_t>(widest, d);
    RETURN_IF_ERROR(s.dev_a.Reserve(rows * widest * DTypeSize(m.dtype)));
    RETURN_IF_ERROR(s.dev_b.Reserve(rows * widest * DTypeSize(m.dtype)));
    CUDA_RETURN(operon_cuda::LaunchConvert(m.dtype, static_cast<const float*>(s.dev_in.p), s.dev_a.p, rows * dims[0], s.stream));
    void* cur = s.dev_a.p;
    void* other = s.dev_b.p;
    const size_t layers = dims.size() - 1;
    for (size_t l = 0; l < layers; ++l) {
      const bool last = l + 1 == layers;
      void* out = last ? s.dev_out.p : other;
      CUDA_RETURN(operon_cuda::LaunchDense(m.dtype, cur, st.dev_weights[l], st.dev_bias[l], out, n, static_cast<int>(dims[l + 1]),
                                           static_cast<int>(dims[l]), !last, last, s.stream));
      std::swap(cur, other);
    }
  }
  if (m.timing) CUDA_RETURN(cudaEventRecord(s.stop, s.stream));
  CUDA_RETURN(cudaMemcpyAsync(s.host_out.p, s.dev_out.p, out_bytes, cudaMemcpyDeviceToHost, s.stream));
  s.pending_dst = dst;
  s.pending_bytes = out_bytes;
  s.kernel_us = kernel_us;
  return nullptr;
}

TRITONSERVER_Error* DrainAll(const ModelState& m, InstanceState& st) {
  TRITONSERVER_Error* first = nullptr;
  for (Slot& s : st.slots) {
    TRITONSERVER_Error* e = Drain(m, s);
    if (e != nullptr && first == nullptr) first = e;
    else if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  }
  return first;
}

// One contiguous host view of an input (its only buffer, or a gathered copy).
TRITONSERVER_Error* InputBytes(TRITONBACKEND_Input* input, uint32_t buffers, std::vector<uint8_t>* gathered, const uint8_t** out) {
  for (uint32_t b = 0; b < buffers; ++b) {
    const void* base;
    uint64_t bytes;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &base, &bytes, &type, &id));
    if (type == TRITONSERVER_MEMORY_GPU) return Error(TRITONSERVER_ERROR_UNSUPPORTED, "GPU input buffers are not supported");
    if (buffers == 1) { *out = static_cast<const uint8_t*>(base); return nullptr; }
    gathered->insert(gathered->end(), static_cast<const uint8_t*>(base), static_cast<const uint8_t*>(base) + bytes);
  }
  *out = gathered->data();
  return nullptr;
}

// Validates one request and enqueues its chunks; the output is complete after DrainAll.
TRITONSERVER_Error* Submit(const ModelState& m, InstanceState& st, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                           std::vector<uint8_t>* gathered, double* kernel_us) {
  const bool mlp = m.op == Operation::kMlp;
  const char* in_name = mlp ? "x" : "pixels";
  TRITONBACKEND_Input* input;
  if (TRITONSERVER_Error* e = TRITONBACKEND_RequestInput(request, in_name, &input)) {
    TRITONSERVER_ErrorDelete(e);
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("the request has no input '") + in_name +
                                                     (mlp ? "' (FP32 [N, " + std::to_string(m.weights.dims[0]) + "])" : "' (UINT8 [N, H, W, 3 or 4])"));
  }
  TRITONSERVER_DataType datatype;
  const int64_t* shape;
  uint32_t dims, buffers;
  uint64_t size;
  RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, nullptr, &datatype, &shape, &dims, &size, &buffers));
  const uint8_t* data = nullptr;
  if (mlp) {
    const int64_t d0 = m.weights.dims[0], dl = m.weights.dims.back();
    if (datatype != TRITONSERVER_TYPE_FP32 || dims != 2 || shape[1] != d0 || shape[0] < 0)
      return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'x' must be FP32 [N, " + std::to_string(d0) + "]");
    if (size != static_cast<uint64_t>(shape[0] * d0 * 4))
      return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'x' holds " + std::to_string(size) + " bytes, its shape needs " + std::to_string(shape[0] * d0 * 4));
    RETURN_IF_ERROR(InputBytes(input, buffers, gathered, &data));
    const int64_t out_shape[2] = {shape[0], dl};
    TRITONBACKEND_Output* output;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, "y", TRITONSERVER_TYPE_FP32, out_shape, 2));
    void* buffer;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, shape[0] * dl * 4, &type, &id));
    for (int64_t r = 0; r < shape[0]; r += m.chunk) {
      size_t rows = static_cast<size_t>(std::min<int64_t>(m.chunk, shape[0] - r));
      RETURN_IF_ERROR(Enqueue(m, st, data + r * d0 * 4, rows, d0 * 4, static_cast<uint8_t*>(buffer) + r * dl * 4, dl * 4, 0, 0, 0, kernel_us));
    }
    return nullptr;
  }
  if (datatype != TRITONSERVER_TYPE_UINT8)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("input 'pixels' must be UINT8, got ") + TRITONSERVER_DataTypeString(datatype));
  if (dims != 4 || shape[0] < 0 || shape[1] < 1 || shape[2] < 1 || (shape[3] != 3 && shape[3] != 4))
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'pixels' must have shape [N, H, W, 3 or 4] with H, W >= 1");
  const int64_t n = shape[0], h = shape[1], w = shape[2], c = shape[3];
  if (static_cast<uint64_t>(n * h * w * c) != size)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'pixels' holds " + std::to_string(size) + " bytes, its shape needs " + std::to_string(n * h * w * c));
  RETURN_IF_ERROR(InputBytes(input, buffers, gathered, &data));
  const int64_t out_shape[4] = {n, 3, m.height, m.width};
  TRITONBACKEND_Output* output;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, "x", TRITONSERVER_TYPE_FP32, out_shape, 4));
  const size_t per_in = static_cast<size_t>(h * w * c), per_out = static_cast<size_t>(3) * m.height * m.width * 4;
  void* buffer;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t id = 0;
  RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, n * per_out, &type, &id));
  for (int64_t i = 0; i < n; i += m.chunk) {
    size_t rows = static_cast<size_t>(std::min<int64_t>(m.chunk, n - i));
    RETURN_IF_ERROR(Enqueue(m, st, data + i * per_in, rows, per_in, static_cast<uint8_t*>(buffer) + i * per_out, per_out,
                            static_cast<int>(h), static_cast<int>(w), static_cast<int>(c), kernel_us));
  }
  return nullptr;
}

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  auto state = std::make_unique<ModelState>();
  RETURN_IF_ERROR(ParseModel(model, state.get()));
  return TRITONBACKEND_ModelSetState(model, state.release());
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* p;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &p));
  delete static_cast<ModelState*>(p);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  const char* name;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  TRITONSERVER_InstanceGroupKind kind;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceKind(instance, &kind));
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("instance '") + name + "' is KIND_" + TRITONSERVER_InstanceGroupKindString(kind) +
                                                     "; this backend runs on GPUs only: use instance_group { kind: KIND_GPU }");
  int32_t device;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &device));
  TRITONBACKEND_Model* model;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* p;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &p));
  auto* st = new InstanceState();
  st->device = device;
  TRITONSERVER_Error* err = InitInstance(*static_cast<ModelState*>(p), st);
  if (err != nullptr) {
    FreeInstance(st);
    std::string why = std::string("instance '") + name + "' on GPU " + std::to_string(device) + ": " + TRITONSERVER_ErrorMessage(err);
    TRITONSERVER_Error_Code code = TRITONSERVER_ErrorCode(err);
    TRITONSERVER_ErrorDelete(err);
    return TRITONSERVER_ErrorNew(code, why.c_str());
  }
  return TRITONBACKEND_ModelInstanceSetState(instance, st);
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* p;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &p));
  if (p != nullptr) FreeInstance(static_cast<InstanceState*>(p));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
                                                       const uint32_t count) {
  TRITONBACKEND_Model* model;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* mp;
  void* ip;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &mp));
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &ip));
  const ModelState& m = *static_cast<ModelState*>(mp);
  InstanceState& st = *static_cast<InstanceState*>(ip);
  const uint64_t start = NowNs();
  cudaError_t se = cudaSetDevice(st.device);
  std::vector<TRITONBACKEND_Response*> responses(count, nullptr);
  std::vector<TRITONSERVER_Error*> errors(count, nullptr);
  std::vector<std::vector<uint8_t>> gathered(count);
  std::vector<double> kernel_us(count, 0.0);
  // Every request's chunks are enqueued first (they overlap across requests
  // too); one bad request fails only itself.
  for (uint32_t i = 0; i < count; ++i) {
    errors[i] = TRITONBACKEND_ResponseNew(&responses[i], requests[i]);
    if (errors[i] == nullptr && se != cudaSuccess) errors[i] = CudaError(se, "cudaSetDevice");
    if (errors[i] == nullptr) errors[i] = Submit(m, st, requests[i], responses[i], &gathered[i], &kernel_us[i]);
  }
  TRITONSERVER_Error* drained = DrainAll(m, st);
  const uint64_t end = NowNs();
  uint32_t ok = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (errors[i] == nullptr && drained != nullptr) errors[i] = TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(drained), TRITONSERVER_ErrorMessage(drained));
    if (responses[i] != nullptr) {
      if (m.timing && errors[i] == nullptr) TRITONBACKEND_ResponseSetDoubleParameter(responses[i], "operon_cuda_kernel_us", kernel_us[i]);
      bool success = errors[i] == nullptr;
      ok += success ? 1 : 0;
      TRITONSERVER_Error* e = TRITONBACKEND_ResponseSend(responses[i], TRITONSERVER_RESPONSE_COMPLETE_FINAL, errors[i]);
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
      e = TRITONBACKEND_ModelInstanceReportStatistics(instance, requests[i], success, start, start, end, end);
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    }
    if (errors[i] != nullptr) TRITONSERVER_ErrorDelete(errors[i]);
    TRITONSERVER_Error* e = TRITONBACKEND_RequestRelease(requests[i], TRITONSERVER_REQUEST_RELEASE_ALL);
    if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  }
  if (drained != nullptr) TRITONSERVER_ErrorDelete(drained);
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, ok, start, start, end, end);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  return nullptr;
}

}  // extern "C"
