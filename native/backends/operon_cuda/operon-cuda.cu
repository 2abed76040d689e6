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
// Execute returns once a batch is enqueued: the instance's completion thread
// waits for each chunk, copies its output out of pinned memory, and answers
// and releases a batch's requests when its last chunk is done (Triton's API
// allows responses after execute returns). So consecutive executions overlap
// too: the next batch's chunks are staged and copied in while the previous
// batch computes and copies back; a stream takes a new chunk only once its
// previous chunk's output has left its pinned buffer.
// Parameter `timing` "true" adds each response's GPU kernel time (cudaEvents,
// microseconds; the MLP's FP32 -> FP16/BF16 input conversion is outside it,
// as PyTorch's timing of a model fed FP16 is) as the response parameter
// `operon_cuda_kernel_us`.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda-kernels.h"
#include "cuda-reference.h"
#include "cuda-refusal.h"
#include "backend-model-config.h"
#include "json-value.h"
#include "triton/core/tritonbackend.h"

namespace {

using operon_cuda::DType;
static_assert(cudaErrorInsufficientDriver == operon_cuda::kCudaErrorInsufficientDriver, "cuda-refusal.h's numbers");
static_assert(cudaErrorNoDevice == operon_cuda::kCudaErrorNoDevice, "cuda-refusal.h's numbers");

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
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  why += operon_cuda::CudaErrorHint(e, CUDART_VERSION, driver);
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

// One stream's resources. `busy` while a chunk's output has not yet left host_out (guarded by InstanceState::mutex).
struct Slot {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  Buffer host_in{nullptr, 0, true}, host_out{nullptr, 0, true};
  Buffer dev_in, dev_a, dev_b, dev_out;
  bool busy = false;
};

// One execution's requests, answered when its last chunk is done (`outstanding` counts the chunks in flight,
// plus one held by Execute while it enqueues).
struct Batch {
  TRITONBACKEND_ModelInstance* instance = nullptr;
  std::vector<TRITONBACKEND_Request*> requests;
  std::vector<TRITONBACKEND_Response*> responses;
  std::vector<TRITONSERVER_Error*> errors;
  std::vector<std::vector<uint8_t>> gathered;
  std::vector<double> kernel_us;
  uint64_t start_ns = 0;
  int outstanding = 1;
};

// A chunk in flight: where its output goes once its stream is done.
struct Chunk {
  size_t slot = 0;
  void* dst = nullptr;  // host memory the pinned output goes to; nullptr: the output went device to device
  size_t bytes = 0;
  Batch* batch = nullptr;
  size_t request = 0;
};

struct InstanceState {
  int device = 0;
  bool timing = false;
  std::vector<Slot> slots;
  std::vector<void*> dev_weights;  // per layer, in the model's dtype
  std::vector<float*> dev_bias;
  size_t next = 0;  // the slot the next chunk goes to (Execute's thread only)
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Chunk> chunks;  // in enqueue order, for the completion thread
  bool stopping = false;
  std::thread completion;
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

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void CompletionLoop(InstanceState* st);

// Stops the completion thread once every chunk it holds is answered, then frees the instance's CUDA resources.
void FreeInstance(InstanceState* st) {
  if (st->completion.joinable()) {
    {
      std::lock_guard<std::mutex> lock(st->mutex);
      st->stopping = true;
    }
    st->changed.notify_all();
    st->completion.join();
  }
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
  st->timing = m.timing;
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
  st->completion = std::thread(CompletionLoop, st);
  return nullptr;
}

// The first error wins; later ones are dropped.
void KeepFirst(TRITONSERVER_Error** slot, TRITONSERVER_Error* e) {
  if (e == nullptr) return;
  if (*slot == nullptr) *slot = e;
  else TRITONSERVER_ErrorDelete(e);
}

// Answers and releases every request of a batch, reports its statistics, and frees it.
void FinishBatch(Batch* b, bool timing) {
  const uint64_t end = NowNs();
  uint32_t ok = 0;
  for (size_t i = 0; i < b->requests.size(); ++i) {
    if (b->responses[i] != nullptr) {
      if (timing && b->errors[i] == nullptr)
        TRITONBACKEND_ResponseSetDoubleParameter(b->responses[i], "operon_cuda_kernel_us", b->kernel_us[i]);
      bool success = b->errors[i] == nullptr;
      ok += success ? 1 : 0;
      TRITONSERVER_Error* e = TRITONBACKEND_ResponseSend(b->responses[i], TRITONSERVER_RESPONSE_COMPLETE_FINAL, b->errors[i]);
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
      e = TRITONBACKEND_ModelInstanceReportStatistics(b->instance, b->requests[i], success, b->start_ns, b->start_ns, end, end);
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    }
    if (b->errors[i] != nullptr) TRITONSERVER_ErrorDelete(b->errors[i]);
    TRITONSERVER_Error* e = TRITONBACKEND_RequestRelease(b->requests[i], TRITONSERVER_REQUEST_RELEASE_ALL);
    if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  }
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportBatchStatistics(b->instance, ok, b->start_ns, b->start_ns, end, end);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  delete b;
}

// Drops one reference to a batch (a chunk done, or Execute done enqueueing); the last one answers it.
void Unref(InstanceState* st, Batch* b) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(st->mutex);
    last = --b->outstanding == 0;
  }
  if (last) FinishBatch(b, st->timing);
}

// The instance's completion thread: waits for each chunk in enqueue order, copies its output from pinned memory
// to the response's buffer, frees its stream for the next chunk, and answers a batch after its last chunk.
void CompletionLoop(InstanceState* st) {
  cudaSetDevice(st->device);
  for (;;) {
    Chunk c;
    {
      std::unique_lock<std::mutex> lock(st->mutex);
      st->changed.wait(lock, [&] { return st->stopping || !st->chunks.empty(); });
      if (st->chunks.empty()) return;
      c = st->chunks.front();
      st->chunks.pop_front();
    }
    Slot& s = st->slots[c.slot];
    cudaError_t e = cudaStreamSynchronize(s.stream);
    if (e == cudaSuccess) {
      if (c.dst != nullptr) std::memcpy(c.dst, s.host_out.p, c.bytes);
      if (st->timing) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, s.start, s.stop) == cudaSuccess) c.batch->kernel_us[c.request] += ms * 1000.0;
      }
    }
    {
      std::lock_guard<std::mutex> lock(st->mutex);
      if (e != cudaSuccess) KeepFirst(&c.batch->errors[c.request], CudaError(e, "cudaStreamSynchronize"));
      s.busy = false;
    }
    st->changed.notify_all();
    Unref(st, c.batch);
  }
}

// Where a request's input and output are: host memory (staged through pinned buffers) or this instance's GPU
// (an operator's previous or next step keeps the tensor there: read in place, written device to device).
struct Placement {
  bool src_on_device = false;
  bool dst_on_device = false;
};

// Enqueues one chunk of request `request` of batch `b`: `rows` rows of `in_row` bytes at src, `out_row` bytes each
// to dst. Waits while the next stream's previous chunk is still in flight (its pinned buffers are in use).
TRITONSERVER_Error* Enqueue(const ModelState& m, InstanceState& st, Batch* b, size_t request, const void* src, size_t rows,
                            size_t in_row, void* dst, size_t out_row, int h, int w, int c, Placement where) {
  const size_t index = st.next;
  Slot& s = st.slots[index];
  st.next = (st.next + 1) % st.slots.size();
  {
    std::unique_lock<std::mutex> lock(st.mutex);
    st.changed.wait(lock, [&] { return !s.busy; });
  }
  const size_t in_bytes = rows * in_row, out_bytes = rows * out_row;
  // Staging buffers only for the sides in host memory.
  if (!where.src_on_device) {
    RETURN_IF_ERROR(s.host_in.Reserve(in_bytes));
    RETURN_IF_ERROR(s.dev_in.Reserve(in_bytes));
  }
  if (!where.dst_on_device) RETURN_IF_ERROR(s.host_out.Reserve(out_bytes));
  RETURN_IF_ERROR(s.dev_out.Reserve(out_bytes));
  const void* dev_in = src;
  if (!where.src_on_device) {
    std::memcpy(s.host_in.p, src, in_bytes);  // shared memory -> pinned (the copy engine reads only pinned memory at full speed)
    CUDA_RETURN(cudaMemcpyAsync(s.dev_in.p, s.host_in.p, in_bytes, cudaMemcpyHostToDevice, s.stream));
    dev_in = s.dev_in.p;
  }
  const int n = static_cast<int>(rows);
  if (m.op == Operation::kPreprocess) {
    if (m.timing) CUDA_RETURN(cudaEventRecord(s.start, s.stream));
    CUDA_RETURN(operon_cuda::LaunchPreprocess(static_cast<const uint8_t*>(dev_in), n, h, w, c, m.height, m.width,
                                              static_cast<float*>(s.dev_out.p), s.stream));
  } else {
    const auto& dims = m.weights.dims;
    size_t widest = 0;
    for (uint32_t d : dims) widest = std::max<size_t>(widest, d);
    RETURN_IF_ERROR(s.dev_a.Reserve(rows * widest * DTypeSize(m.dtype)));
    RETURN_IF_ERROR(s.dev_b.Reserve(rows * widest * DTypeSize(m.dtype)));
    // Layer l writes hidden[l % 2]; FP16/BF16 input is converted into dev_b first (layer 0 reads it, writes dev_a),
    // FP32 input is read where it landed.
    void* hidden[2] = {s.dev_a.p, s.dev_b.p};
    const void* cur = dev_in;
    if (m.dtype != DType::kFp32) {
      CUDA_RETURN(operon_cuda::LaunchConvert(m.dtype, static_cast<const float*>(dev_in), s.dev_b.p, rows * dims[0], s.stream));
      cur = s.dev_b.p;
    }
    if (m.timing) CUDA_RETURN(cudaEventRecord(s.start, s.stream));
    const size_t layers = dims.size() - 1;
    for (size_t l = 0; l < layers; ++l) {
      const bool last = l + 1 == layers;
      void* out = last ? s.dev_out.p : hidden[l % 2];
      CUDA_RETURN(operon_cuda::LaunchDense(m.dtype, cur, st.dev_weights[l], st.dev_bias[l], out, n, static_cast<int>(dims[l + 1]),
                                           static_cast<int>(dims[l]), !last, last, s.stream));
      cur = out;
    }
  }
  if (m.timing) CUDA_RETURN(cudaEventRecord(s.stop, s.stream));
  if (where.dst_on_device)
    CUDA_RETURN(cudaMemcpyAsync(dst, s.dev_out.p, out_bytes, cudaMemcpyDeviceToDevice, s.stream));
  else
    CUDA_RETURN(cudaMemcpyAsync(s.host_out.p, s.dev_out.p, out_bytes, cudaMemcpyDeviceToHost, s.stream));
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    s.busy = true;
    b->outstanding += 1;
    st.chunks.push_back(Chunk{index, where.dst_on_device ? nullptr : dst, out_bytes, b, request});
  }
  st.changed.notify_all();
  return nullptr;
}

// One contiguous view of an input: its only buffer (in host memory, or on this instance's GPU: *on_device), or a
// gathered host copy of several host buffers.
TRITONSERVER_Error* InputBytes(TRITONBACKEND_Input* input, uint32_t buffers, int device, std::vector<uint8_t>* gathered,
                               const uint8_t** out, bool* on_device) {
  *on_device = false;
  for (uint32_t b = 0; b < buffers; ++b) {
    const void* base;
    uint64_t bytes;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &base, &bytes, &type, &id));
    if (type == TRITONSERVER_MEMORY_GPU) {
      if (id != device)
        return Error(TRITONSERVER_ERROR_INVALID_ARG, "the input is on GPU " + std::to_string(id) + ", this instance runs on GPU " +
                                                         std::to_string(device));
      if (buffers != 1)
        return Error(TRITONSERVER_ERROR_INVALID_ARG, "an input in GPU memory must be one buffer, got " + std::to_string(buffers));
      *out = static_cast<const uint8_t*>(base);
      *on_device = true;
      return nullptr;
    }
    if (buffers == 1) { *out = static_cast<const uint8_t*>(base); return nullptr; }
    gathered->insert(gathered->end(), static_cast<const uint8_t*>(base), static_cast<const uint8_t*>(base) + bytes);
  }
  *out = gathered->data();
  return nullptr;
}

// The output's memory: asked for on this instance's GPU, where the host keeps it when the operator's next step
// runs there too (Triton's contract lets the host answer with host memory instead, the usual case).
TRITONSERVER_Error* OutputMemory(TRITONBACKEND_Output* output, int device, uint64_t bytes, void** buffer, bool* on_device) {
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_GPU;
  int64_t id = device;
  RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, buffer, bytes, &type, &id));
  if (type == TRITONSERVER_MEMORY_GPU && id != device)
    return Error(TRITONSERVER_ERROR_INTERNAL, "the host gave output memory on GPU " + std::to_string(id) + ", this instance runs on GPU " +
                                                  std::to_string(device));
  *on_device = type == TRITONSERVER_MEMORY_GPU;
  return nullptr;
}

// Validates request `i` of batch `b` and enqueues its chunks; its output is complete when the batch's last chunk is.
TRITONSERVER_Error* Submit(const ModelState& m, InstanceState& st, Batch* b, size_t i) {
  TRITONBACKEND_Request* request = b->requests[i];
  TRITONBACKEND_Response* response = b->responses[i];
  std::vector<uint8_t>* gathered = &b->gathered[i];
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
    Placement where;
    RETURN_IF_ERROR(InputBytes(input, buffers, st.device, gathered, &data, &where.src_on_device));
    const int64_t out_shape[2] = {shape[0], dl};
    TRITONBACKEND_Output* output;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, "y", TRITONSERVER_TYPE_FP32, out_shape, 2));
    void* buffer;
    RETURN_IF_ERROR(OutputMemory(output, st.device, shape[0] * dl * 4, &buffer, &where.dst_on_device));
    for (int64_t r = 0; r < shape[0]; r += m.chunk) {
      size_t rows = static_cast<size_t>(std::min<int64_t>(m.chunk, shape[0] - r));
      RETURN_IF_ERROR(Enqueue(m, st, b, i, data + r * d0 * 4, rows, d0 * 4, static_cast<uint8_t*>(buffer) + r * dl * 4, dl * 4, 0, 0, 0,
                              where));
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
  Placement where;
  RETURN_IF_ERROR(InputBytes(input, buffers, st.device, gathered, &data, &where.src_on_device));
  const int64_t out_shape[4] = {n, 3, m.height, m.width};
  TRITONBACKEND_Output* output;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, "x", TRITONSERVER_TYPE_FP32, out_shape, 4));
  const size_t per_in = static_cast<size_t>(h * w * c), per_out = static_cast<size_t>(3) * m.height * m.width * 4;
  void* buffer;
  RETURN_IF_ERROR(OutputMemory(output, st.device, n * per_out, &buffer, &where.dst_on_device));
  for (int64_t k = 0; k < n; k += m.chunk) {
    size_t rows = static_cast<size_t>(std::min<int64_t>(m.chunk, n - k));
    RETURN_IF_ERROR(Enqueue(m, st, b, i, data + k * per_in, rows, per_in, static_cast<uint8_t*>(buffer) + k * per_out, per_out,
                            static_cast<int>(h), static_cast<int>(w), static_cast<int>(c), where));
  }
  return nullptr;
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
  auto* b = new Batch();
  b->instance = instance;
  b->start_ns = NowNs();
  b->requests.assign(requests, requests + count);
  b->responses.assign(count, nullptr);
  b->errors.assign(count, nullptr);
  b->gathered.resize(count);
  b->kernel_us.assign(count, 0.0);
  cudaError_t se = cudaSetDevice(st.device);
  // Every request's chunks are enqueued (they overlap across requests, and with the previous batch's chunks
  // still in flight); one bad request fails only itself. The completion thread answers the batch.
  for (uint32_t i = 0; i < count; ++i) {
    TRITONSERVER_Error* e = TRITONBACKEND_ResponseNew(&b->responses[i], requests[i]);
    if (e == nullptr && se != cudaSuccess) e = CudaError(se, "cudaSetDevice");
    if (e == nullptr) e = Submit(m, st, b, i);
    std::lock_guard<std::mutex> lock(st.mutex);
    KeepFirst(&b->errors[i], e);
  }
  Unref(&st, b);
  return nullptr;
}

}  // extern "C"
