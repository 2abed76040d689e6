// CPU reference implementations of operon_cuda's two operations, in plain
// C++ (no CUDA): the tests (operon-backend-host cuda-selftest) check every
// GPU output against these. Also the MLP weights file reader, shared by the
// backend and the tests.
//
// MLP weights file (`mlp.weights` in the model's version folder, written by
// examples/scripts/write-mlp-weights.mjs), little-endian:
//   bytes 0..7   magic "OPMLPW01"
//   uint32       L, the number of layers (1..16)
//   uint32 x L+1 the widths d0 (input) .. dL (output), each 1..65536
//   then for each layer l = 0..L-1:
//     float32 x (d[l+1] * d[l])   W_l, row-major [out][in]
//     float32 x d[l+1]            b_l
// Forward pass: h_{l+1} = W_l h_l + b_l, ReLU after every layer but the last.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace operon_cuda {

struct MlpWeights {
  std::vector<uint32_t> dims;               // d0 .. dL
  std::vector<std::vector<float>> weights;  // per layer, [out][in]
  std::vector<std::vector<float>> biases;   // per layer, [out]
};

// Reads a weights file; on failure returns false with a message naming the
// file and what is wrong (missing, bad magic, truncated, bad widths).
bool ReadMlpWeights(const std::string& path, MlpWeights* out, std::string* why);

// Writes one (the tests and the device check make small random models).
bool WriteMlpWeights(const std::string& path, const MlpWeights& w, std::string* why);

// Deterministic pseudo-random weights (uniform in +-1/sqrt(fan_in)).
MlpWeights RandomMlp(const std::vector<uint32_t>& dims, uint32_t seed);

enum class Precision { kFp32, kFp16, kBf16 };

// Rounds a float to the precision's nearest value (round to nearest even),
// as the GPU stores weights and activations in FP16/BF16.
float RoundTo(Precision p, float v);

// out[batch][dL] = MLP(x[batch][d0]). Weights and each layer's input are
// rounded to `p` (as the GPU kernels store them); accumulation in double,
// so the reference is at least as exact as any GPU order of summation.
void MlpReference(const MlpWeights& w, Precision p, const float* x, int batch, float* out);

// The text_direction preprocessing (same contract as operon_image_preprocess):
// pixels UINT8 [n, h, w, c] (c = 3 RGB or 4 RGBA) to x FP32 [n, 3, height,
// width]: resize to `height` keeping the aspect (width min(width,
// ceil(height * w / h))), bilinear with half-pixel centres and edge clamping,
// rounded to 8 bits (halves up); (v / 255 - 0.5) / 0.5; BGR planes; zeros
// on the right. A direct per-pixel formulation (no separable caching).
void PreprocessReference(const uint8_t* pixels, int n, int h, int w, int c, int height, int width, float* out);

}  // namespace operon_cuda
