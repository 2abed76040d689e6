// operon_image_preprocess: the `text_direction` pipeline's image
// preprocessing (PP-OCR's cls `resize_norm_img`) as a native backend, an
// alternative to examples/model_repository/text_direction_preprocess (the
// TypeScript step). It takes DECODED pixels, not PNG files:
//
//   input  "pixels" UINT8 [N, H, W, C], C = 3 (RGB) or 4 (RGBA, alpha ignored)
//   output "x"      FP32  [N, 3, 48, 192]
//
// Per image: resize to height 48 keeping the aspect ratio (width
// min(192, ceil(48 * W / H))), bilinear with half-pixel centres and edge
// clamping like cv2.INTER_LINEAR, rounded to 8 bits; normalize v to
// (v / 255 - 0.5) / 0.5; CHW with the channels in BGR order; zero padding on
// the right up to 192. The arithmetic is the TypeScript step's, in the same
// order and in double precision, so the outputs are the same values (the
// build uses -ffp-contract=off: no fused multiply-adds).
//
// Speed: the resize is separable. Each source row needed is interpolated
// horizontally once into a row of doubles (and reused by the next output
// row); the vertical blend of two such rows and the rounding run over
// contiguous arrays with AVX2 intrinsics, chosen at run time
// (__builtin_cpu_supports), with a portable loop otherwise; normalization is
// a 256-entry table. The library runs on any x86-64.
#include <cmath>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend-execute.h"
#include "backend-model-config.h"
#include "json-value.h"
#include "triton/core/tritonbackend.h"

namespace {

constexpr int kChannels = 3;


#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OPERON_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define OPERON_CLONES
#endif

struct ModelState {
  int height = 48;
  int width = 192;
  float lut[256];  // (v / 255 - 0.5) / 0.5, as the TypeScript step computes it
};

struct Tap {
  int low, high;
  double weight;
};

// cv2.INTER_LINEAR's half-pixel mapping of `target` coordinates onto `source`.
std::vector<Tap> Axis(int source, int target) {
  std::vector<Tap> taps(target);
  double scale = static_cast<double>(source) / static_cast<double>(target);
  for (int i = 0; i < target; ++i) {
    double position = (i + 0.5) * scale - 0.5;
    double low = std::floor(position);
    double weight = position - low;
    int l = static_cast<int>(low);
    if (l < 0) { l = 0; weight = 0; }
    if (l >= source - 1) { l = source - 1; weight = 0; }
    taps[i] = Tap{l, l + 1 < source ? l + 1 : source - 1, weight};
  }
  return taps;
}

// The horizontal taps as separate arrays (byte offsets of the two source
// pixels and their weights), which the compiler handles better than structs.
struct Columns {
  std::vector<int32_t> a, b;
  std::vector<double> wa, wb;
};

Columns MakeColumns(const std::vector<Tap>& xs, int channels) {
  Columns c;
  for (const Tap& t : xs) {
    c.a.push_back(t.low * channels);
    c.b.push_back(t.high * channels);
    c.wa.push_back(1 - t.weight);
    c.wb.push_back(t.weight);
  }
  return c;
}

// One source row interpolated horizontally: out[dx * 3 + c], RGB order.
OPERON_CLONES void HorizontalRow(const uint8_t* row, const Columns& cols, double* out) {
  const int n = static_cast<int>(cols.a.size());
  const int32_t* ia = cols.a.data();
  const int32_t* ib = cols.b.data();
  const double* wa = cols.wa.data();
  const double* wb = cols.wb.data();
  for (int dx = 0; dx < n; ++dx) {
    const uint8_t* a = row + ia[dx];
    const uint8_t* b = row + ib[dx];
    out[dx * 3 + 0] = a[0] * wa[dx] + b[0] * wb[dx];
    out[dx * 3 + 1] = a[1] * wa[dx] + b[1] * wb[dx];
    out[dx * 3 + 2] = a[2] * wa[dx] + b[2] * wb[dx];
  }
}

// value = round(top * (1 - wy) + bottom * wy), rounding halves up like
// JavaScript's Math.round (exact: no x + 0.5 double rounding).
void VerticalBlendScalar(const double* __restrict__ top, const double* __restrict__ bottom, double wy, int count,
                         double* __restrict__ out) {
  const double wt = 1 - wy;
  for (int i = 0; i < count; ++i) {
    double v = top[i] * wt + bottom[i] * wy;
    double r = std::floor(v);
    out[i] = (v - r) >= 0.5 ? r + 1 : r;  // an integer from 0 to 255
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same, four lanes at a time: separate multiply and add (no FMA, as the
// scalar code and JavaScript compute it), floor, and +1 where the fraction
// is at least one half. Bit-identical to VerticalBlendScalar.
__attribute__((target("avx2"))) void VerticalBlendAvx2(const double* __restrict__ top,
                                                       const double* __restrict__ bottom, double wy, int count,
                                                       double* __restrict__ out) {
  const __m256d wt = _mm256_set1_pd(1 - wy), wb = _mm256_set1_pd(wy);
  const __m256d half = _mm256_set1_pd(0.5), one = _mm256_set1_pd(1.0);
  int i = 0;
  for (; i + 4 <= count; i += 4) {
    __m256d v = _mm256_add_pd(_mm256_mul_pd(_mm256_loadu_pd(top + i), wt), _mm256_mul_pd(_mm256_loadu_pd(bottom + i), wb));
    __m256d r = _mm256_floor_pd(v);
    __m256d up = _mm256_and_pd(_mm256_cmp_pd(_mm256_sub_pd(v, r), half, _CMP_GE_OQ), one);
    _mm256_storeu_pd(out + i, _mm256_add_pd(r, up));
  }
  if (i < count) VerticalBlendScalar(top + i, bottom + i, wy, count - i, out + i);
}
// OPERON_PREPROCESS_SCALAR=1 forces the portable loop (the tests compare both).
const bool kHasAvx2 = __builtin_cpu_supports("avx2") && std::getenv("OPERON_PREPROCESS_SCALAR") == nullptr;
#else
const bool kHasAvx2 = false;
#endif

// Runtime dispatch: AVX2 where the CPU has it, else the portable loop.
void VerticalBlend(const double* top, const double* bottom, double wy, int count, double* out) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kHasAvx2) return VerticalBlendAvx2(top, bottom, wy, count, out);
#endif
  VerticalBlendScalar(top, bottom, wy, count, out);
}

// Scatter one blended row (RGB interleaved) to the three BGR planes.
OPERON_CLONES void Scatter(const double* __restrict__ values, int count, const float* __restrict__ lut,
                           float* __restrict__ b, float* __restrict__ g, float* __restrict__ r) {
  for (int dx = 0; dx < count; ++dx) {
    r[dx] = lut[static_cast<int>(values[dx * 3 + 0])];
    g[dx] = lut[static_cast<int>(values[dx * 3 + 1])];
    b[dx] = lut[static_cast<int>(values[dx * 3 + 2])];
  }
}

// One image (H x W x C bytes) into out (3 x height x width floats; every
// value is written, the padding included).
void Preprocess(const ModelState& m, const uint8_t* pixels, int h, int w, int channels, float* out) {
  int resized = static_cast<int>(std::ceil(m.height * (static_cast<double>(w) / static_cast<double>(h))));
  if (resized > m.width) resized = m.width;
  if (resized < 1) resized = 1;
  const Columns cols = MakeColumns(Axis(w, resized), channels);
  std::vector<Tap> ys = Axis(h, m.height);
  // Horizontal rows cached by source row: consecutive output rows share them.
  std::vector<double> row_a(resized * 3), row_b(resized * 3);
  int cached_a = -1, cached_b = -1;
  std::vector<double> values(resized * 3);
  const size_t plane = static_cast<size_t>(m.height) * m.width;
  for (int dy = 0; dy < m.height; ++dy) {
    const Tap& t = ys[dy];
    if (cached_a != t.low) {
      if (cached_b == t.low) {
        std::swap(row_a, row_b);
        std::swap(cached_a, cached_b);
      } else {
        HorizontalRow(pixels + static_cast<size_t>(t.low) * w * channels, cols, row_a.data());
        cached_a = t.low;
      }
    }
    if (cached_b != t.high) {
      HorizontalRow(pixels + static_cast<size_t>(t.high) * w * channels, cols, row_b.data());
      cached_b = t.high;
    }
    VerticalBlend(row_a.data(), row_b.data(), t.weight, resized * 3, values.data());
    float* b = out + 0 * plane + static_cast<size_t>(dy) * m.width;
    float* g = out + 1 * plane + static_cast<size_t>(dy) * m.width;
    float* r = out + 2 * plane + static_cast<size_t>(dy) * m.width;
    Scatter(values.data(), resized, m.lut, b, g, r);
    // Zero padding on the right (only there: the rest is written above).
    const size_t pad = static_cast<size_t>(m.width - resized) * sizeof(float);
    if (pad > 0) {
      std::memset(b + resized, 0, pad);
      std::memset(g + resized, 0, pad);
      std::memset(r + resized, 0, pad);
    }
  }
}

TRITONSERVER_Error* Error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, ("operon_image_preprocess: " + message).c_str());
}

TRITONSERVER_Error* ExecuteOne(const ModelState& m, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response) {
  TRITONBACKEND_Input* input;
  if (TRITONSERVER_Error* e = TRITONBACKEND_RequestInput(request, "pixels", &input)) {
    TRITONSERVER_ErrorDelete(e);
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "the request has no input 'pixels' (UINT8 [N, H, W, 3 or 4])");
  }
  TRITONSERVER_DataType datatype;
  const int64_t* shape;
  uint32_t dims, buffers;
  uint64_t size;
  RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, nullptr, &datatype, &shape, &dims, &size, &buffers));
  if (datatype != TRITONSERVER_TYPE_UINT8)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("input 'pixels' must be UINT8, got ") + TRITONSERVER_DataTypeString(datatype));
  if (dims != 4 || shape[0] < 0 || shape[1] < 1 || shape[2] < 1 || (shape[3] != 3 && shape[3] != 4))
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'pixels' must have shape [N, H, W, 3 or 4] with H, W >= 1");
  const int64_t n = shape[0], h = shape[1], w = shape[2], c = shape[3];
  if (static_cast<uint64_t>(n * h * w * c) != size)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'pixels' holds " + std::to_string(size) + " bytes, its shape needs " +
                                                     std::to_string(n * h * w * c));
  // One contiguous view of the pixels: the buffer itself when there is one
  // (the usual case, no copy), else a gathered copy.
  std::vector<uint8_t> gathered;
  const uint8_t* pixels = nullptr;
  for (uint32_t b = 0; b < buffers; ++b) {
    const void* base;
    uint64_t bytes;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &base, &bytes, &type, &id));
    if (type == TRITONSERVER_MEMORY_GPU) return Error(TRITONSERVER_ERROR_UNSUPPORTED, "GPU input buffers are not supported");
    if (buffers == 1) {
      pixels = static_cast<const uint8_t*>(base);
    } else {
      gathered.insert(gathered.end(), static_cast<const uint8_t*>(base), static_cast<const uint8_t*>(base) + bytes);
      pixels = gathered.data();
    }
  }
  const int64_t out_shape[4] = {n, kChannels, m.height, m.width};
  TRITONBACKEND_Output* output;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, "x", TRITONSERVER_TYPE_FP32, out_shape, 4));
  const size_t per_image = static_cast<size_t>(kChannels) * m.height * m.width;
  void* buffer;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t id = 0;
  RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, n * per_image * sizeof(float), &type, &id));
  if (type == TRITONSERVER_MEMORY_GPU) return Error(TRITONSERVER_ERROR_UNSUPPORTED, "got a GPU output buffer");
  float* x = static_cast<float*>(buffer);
  for (int64_t i = 0; i < n; ++i)
    Preprocess(m, pixels + static_cast<size_t>(i * h * w * c), static_cast<int>(h), static_cast<int>(w), static_cast<int>(c),
               x + i * per_image);
  return nullptr;
}

TRITONSERVER_Error* SizeParameter(const operon_json::Value& config, const char* key, int* out) {
  const std::string* v = operon_json::ConfigParameter(config, key);
  if (v == nullptr) return nullptr;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < 1 || n > 4096)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("invalid config field 'parameters.") + key +
                                                     "': must be an integer from 1 to 4096, got '" + *v + "'");
  *out = static_cast<int>(n);
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  operon_json::Value config;
  RETURN_IF_ERROR(operon_backend::ParsedModelConfig(model, "operon_image_preprocess", &config));
  TRITONSERVER_Error* err = nullptr;
  auto* state = new ModelState();
  if ((err = SizeParameter(config, "height", &state->height)) != nullptr ||
      (err = SizeParameter(config, "width", &state->width)) != nullptr) {
    delete state;
    return err;
  }
  for (int v = 0; v < 256; ++v) state->lut[v] = static_cast<float>((v / 255.0 - 0.5) / 0.5);
  return TRITONBACKEND_ModelSetState(model, state);
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  return operon_backend::DeleteModelState<ModelState>(model);
}

// A CPU backend: a KIND_GPU instance is refused, never run on the CPU instead (operon_cuda's
// operation "preprocess" is this step on GPUs).
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  return operon_backend::RefuseGpuInstance(instance, "operon_image_preprocess");
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, const uint32_t count) {
  // Each request is answered on its own: one bad request fails only itself.
  return operon_backend::RespondWithModelState<ModelState>(instance, requests, count, ExecuteOne);
}

}  // extern "C"
