// operon_tensor_ops: three of the step library's numeric steps
// (packages/steps/src/tensor-steps.ts, image-steps.ts) as a Triton C++
// backend. An operon_steps worker loads it in its own process for the steps
// where that pays (packages/worker/src/backends/steps-native-kernels.ts:
// image.normalize of 8-bit pixels); bench/numeric-steps-native.mjs measures
// all three against the TypeScript steps. Same arithmetic as those steps
// (double precision, then stored as FP32): the outputs are the same values.
// It also serves as an ordinary native model (backend: "operon_tensor_ops").
//
// config parameter "op":
//   softmax    x FP32 [N, n]        -> y FP32 [N, n]      (last axis)
//   topk       x FP32 [N, n]        -> score FP32 [N, k], index INT64 [N, k]
//                                      (parameter "k"; best first, ties keep
//                                      the lower index, NaN counts as -inf)
//   normalize  x UINT8 [N, H, W, C] -> y FP32 [N, H, W, C]  (HWC;
//                                      (v * scale - mean[c]) / std[c],
//                                      parameters "scale", "mean", "std":
//                                      comma-separated, one value or C)
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "backend-execute.h"
#include "backend-model-config.h"
#include "json-value.h"
#include "triton/core/tritonbackend.h"

namespace {


enum class Op { kSoftmax, kTopk, kNormalize };

struct ModelState {
  Op op = Op::kSoftmax;
  int k = 1;
  double scale = 1;
  std::vector<double> mean{0}, stddev{1};
};

TRITONSERVER_Error* Error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, ("operon_tensor_ops: " + message).c_str());
}

std::vector<double> Numbers(const std::string& text) {
  std::vector<double> out;
  const char* p = text.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    out.push_back(std::strtod(p, &end));
    p = (*end == ',') ? end + 1 : end;
    if (end == p && *p != '\0') break;
  }
  return out;
}

// The request's one input as a contiguous view (the buffer itself when there is one).
TRITONSERVER_Error* ReadInput(TRITONBACKEND_Request* request, TRITONSERVER_DataType want, const void** data,
                              std::vector<int64_t>* shape, std::vector<uint8_t>* gathered) {
  TRITONBACKEND_Input* input;
  RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "x", &input));
  TRITONSERVER_DataType datatype;
  const int64_t* dims;
  uint32_t rank, buffers;
  uint64_t size;
  RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, nullptr, &datatype, &dims, &rank, &size, &buffers));
  if (datatype != want) return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'x' has the wrong datatype");
  shape->assign(dims, dims + rank);
  for (uint32_t b = 0; b < buffers; ++b) {
    const void* base;
    uint64_t bytes;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &base, &bytes, &type, &id));
    if (buffers == 1) {
      *data = base;
    } else {
      gathered->insert(gathered->end(), static_cast<const uint8_t*>(base), static_cast<const uint8_t*>(base) + bytes);
      *data = gathered->data();
    }
  }
  return nullptr;
}

TRITONSERVER_Error* Output(TRITONBACKEND_Response* response, const char* name, TRITONSERVER_DataType datatype,
                           const std::vector<int64_t>& shape, size_t bytes, void** out) {
  TRITONBACKEND_Output* output;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, name, datatype, shape.data(), shape.size()));
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t id = 0;
  return TRITONBACKEND_OutputBuffer(output, out, bytes, &type, &id);
}

TRITONSERVER_Error* ExecuteOne(const ModelState& m, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response) {
  const void* data = nullptr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> gathered;
  const TRITONSERVER_DataType in_type = m.op == Op::kNormalize ? TRITONSERVER_TYPE_UINT8 : TRITONSERVER_TYPE_FP32;
  RETURN_IF_ERROR(ReadInput(request, in_type, &data, &shape, &gathered));
  if (shape.empty()) return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'x' needs at least one dimension");
  const int64_t count = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  const int64_t n = shape.back();
  const int64_t rows = n == 0 ? 0 : count / n;
  if (m.op == Op::kSoftmax) {
    const float* x = static_cast<const float*>(data);
    void* out;
    RETURN_IF_ERROR(Output(response, "y", TRITONSERVER_TYPE_FP32, shape, count * sizeof(float), &out));
    float* y = static_cast<float*>(out);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * n;
      double max = -INFINITY;
      for (int64_t i = 0; i < n; ++i) max = std::max(max, static_cast<double>(row[i]));
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += std::exp(row[i] - max);
      for (int64_t i = 0; i < n; ++i) y[r * n + i] = static_cast<float>(std::exp(row[i] - max) / sum);
    }
    return nullptr;
  }
  if (m.op == Op::kTopk) {
    if (m.k > n) return Error(TRITONSERVER_ERROR_INVALID_ARG, "k is larger than the number of classes");
    const float* x = static_cast<const float*>(data);
    std::vector<int64_t> out_shape = shape;
    out_shape.back() = m.k;
    void *scores, *indices;
    RETURN_IF_ERROR(Output(response, "score", TRITONSERVER_TYPE_FP32, out_shape, rows * m.k * sizeof(float), &scores));
    RETURN_IF_ERROR(Output(response, "index", TRITONSERVER_TYPE_INT64, out_shape, rows * m.k * sizeof(int64_t), &indices));
    std::vector<int64_t> order(n);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * n;
      auto score = [row](int64_t i) { return std::isnan(row[i]) ? -INFINITY : row[i]; };
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + m.k, order.end(), [&](int64_t a, int64_t b) {
        return score(a) > score(b) || (score(a) == score(b) && a < b);
      });
      for (int j = 0; j < m.k; ++j) {
        static_cast<float*>(scores)[r * m.k + j] = row[order[j]];
        static_cast<int64_t*>(indices)[r * m.k + j] = order[j];
      }
    }
    return nullptr;
  }
  // normalize, HWC: channel = index % C, through a 256-entry table per channel.
  const int64_t c = n;
  if (m.mean.size() != 1 && static_cast<int64_t>(m.mean.size()) != c)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "mean has neither 1 nor C values");
  if (m.stddev.size() != 1 && static_cast<int64_t>(m.stddev.size()) != c)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "std has neither 1 nor C values");
  std::vector<float> table(256 * c);
  for (int64_t k = 0; k < c; ++k) {
    const double mean = m.mean[m.mean.size() == 1 ? 0 : k], stddev = m.stddev[m.stddev.size() == 1 ? 0 : k];
    for (int v = 0; v < 256; ++v) table[k * 256 + v] = static_cast<float>((v * m.scale - mean) / stddev);
  }
  void* out;
  RETURN_IF_ERROR(Output(response, "y", TRITONSERVER_TYPE_FP32, shape, count * sizeof(float), &out));
  const uint8_t* x = static_cast<const uint8_t*>(data);
  float* y = static_cast<float*>(out);
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t k = 0; k < c; ++k) y[p * c + k] = table[k * 256 + x[p * c + k]];
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  operon_json::Value config;
  RETURN_IF_ERROR(operon_backend::ParsedModelConfig(model, "operon_tensor_ops", &config));
  auto* state = new ModelState();
  const std::string* op = operon_json::ConfigParameter(config, "op");
  if (op == nullptr || (*op != "softmax" && *op != "topk" && *op != "normalize")) {
    delete state;
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "parameter 'op' must be softmax, topk or normalize");
  }
  state->op = *op == "softmax" ? Op::kSoftmax : *op == "topk" ? Op::kTopk : Op::kNormalize;
  if (const std::string* k = operon_json::ConfigParameter(config, "k")) state->k = std::atoi(k->c_str());
  if (const std::string* v = operon_json::ConfigParameter(config, "scale")) state->scale = std::strtod(v->c_str(), nullptr);
  if (const std::string* v = operon_json::ConfigParameter(config, "mean")) state->mean = Numbers(*v);
  if (const std::string* v = operon_json::ConfigParameter(config, "std")) state->stddev = Numbers(*v);
  return TRITONBACKEND_ModelSetState(model, state);
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  return operon_backend::DeleteModelState<ModelState>(model);
}

// A CPU backend: a KIND_GPU instance is refused, never run on the CPU instead.
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  return operon_backend::RefuseGpuInstance(instance, "operon_tensor_ops");
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, const uint32_t count) {
  return operon_backend::RespondWithModelState<ModelState>(instance, requests, count, ExecuteOne);
}

}  // extern "C"
