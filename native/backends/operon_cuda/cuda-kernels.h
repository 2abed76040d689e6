// operon_cuda's kernels (cuda-kernels.cu), launched on a caller's stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace operon_cuda {

// The text_direction preprocessing of n images [h, w, c] uint8 to [n, 3,
// height, width] float (cuda-reference.h PreprocessReference's contract;
// same arithmetic in double precision, so equal outputs).
cudaError_t LaunchPreprocess(const uint8_t* pixels, int n, int h, int w, int c, int height, int width, float* out,
                             cudaStream_t stream);

// One dense layer: y[m][n] = act(sum_k x[m][k] * W[n][k] + b[n]), act = ReLU
// when `relu`. T is the storage type of x and W (float, __half or
// __nv_bfloat16; the 16-bit types use tensor cores through WMMA with FP32
// accumulation); y is float when `out_float`, else T.
enum class DType { kFp32 = 0, kFp16 = 1, kBf16 = 2 };
cudaError_t LaunchDense(DType t, const void* x, const void* weights, const float* bias, void* y, int m, int n, int k,
                        bool relu, bool out_float, cudaStream_t stream);

// float -> T (the first layer's input).
cudaError_t LaunchConvert(DType t, const float* in, void* out, size_t count, cudaStream_t stream);

}  // namespace operon_cuda
