// operon_cuda's kernels: the preprocessing (one thread per output pixel,
// three channels) and the dense layers (an FP32 SIMT GEMM with 8x8
// register tiles; FP16/BF16 on tensor cores through WMMA 16x16x16 with FP32
// accumulation), bias and ReLU fused into the epilogue.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "cuda-kernels.h"

namespace operon_cuda {

namespace {

__device__ inline void Tap(int source, int target, int i, int* low, int* high, double* weight) {
  double scale = static_cast<double>(source) / static_cast<double>(target);
  double position = (i + 0.5) * scale - 0.5;
  double lo = floor(position);
  double wt = position - lo;
  int l = static_cast<int>(lo);
  if (l < 0) { l = 0; wt = 0; }
  if (l >= source - 1) { l = source - 1; wt = 0; }
  *low = l;
  *high = l + 1 < source ? l + 1 : source - 1;
  *weight = wt;
}

__global__ void PreprocessKernel(const uint8_t* __restrict__ pixels, int n, int h, int w, int c, int height, int width,
                                 int resized, float* __restrict__ out) {
  const int dx = blockIdx.x * blockDim.x + threadIdx.x;
  const int dy = blockIdx.y;
  const int k = blockIdx.z;
  if (dx >= width || k >= n) return;
  const size_t plane = static_cast<size_t>(height) * width;
  float* o = out + static_cast<size_t>(k) * 3 * plane + static_cast<size_t>(dy) * width + dx;
  if (dx >= resized) {
    o[0] = 0.f;
    o[plane] = 0.f;
    o[2 * plane] = 0.f;
    return;
  }
  int y0, y1, x0, x1;
  double wy, wx;
  Tap(h, height, dy, &y0, &y1, &wy);
  Tap(w, resized, dx, &x0, &x1, &wx);
  const uint8_t* img = pixels + static_cast<size_t>(k) * h * w * c;
  const uint8_t* p00 = img + (static_cast<size_t>(y0) * w + x0) * c;
  const uint8_t* p01 = img + (static_cast<size_t>(y0) * w + x1) * c;
  const uint8_t* p10 = img + (static_cast<size_t>(y1) * w + x0) * c;
  const uint8_t* p11 = img + (static_cast<size_t>(y1) * w + x1) * c;
#pragma unroll
  for (int ch = 0; ch < 3; ++ch) {
    // Separate multiplies and adds (the build passes -fmad=false), as the CPU computes them.
    double top = __dadd_rn(__dmul_rn(p00[ch], 1 - wx), __dmul_rn(p01[ch], wx));
    double bottom = __dadd_rn(__dmul_rn(p10[ch], 1 - wx), __dmul_rn(p11[ch], wx));
    double v = __dadd_rn(__dmul_rn(top, 1 - wy), __dmul_rn(bottom, wy));
    double r = floor(v);
    int q = static_cast<int>((v - r) >= 0.5 ? r + 1 : r);
    o[(2 - ch) * plane] = static_cast<float>((q / 255.0 - 0.5) / 0.5);
  }
}

// ---- FP32 SIMT GEMM: 128x128 block tile, BK 8, 256 threads of 8x8 ----
constexpr int kBm = 128, kBn = 128, kBk = 8;

template <typename Out>
__device__ inline void StoreOut(Out* p, float v);
template <>
__device__ inline void StoreOut<float>(float* p, float v) { *p = v; }
template <>
__device__ inline void StoreOut<__half>(__half* p, float v) { *p = __float2half_rn(v); }
template <>
__device__ inline void StoreOut<__nv_bfloat16>(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <typename Out>
__global__ void __launch_bounds__(256) DenseFp32Kernel(const float* __restrict__ x, const float* __restrict__ wt,
                                                       const float* __restrict__ bias, Out* __restrict__ y, int m,
                                                       int n, int k, bool relu) {
  __shared__ float as[kBk][kBm + 4];
  __shared__ float bs[kBk][kBn + 4];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBm, col0 = blockIdx.x * kBn;
  const int tr = (tid / 16) * 8, tc = (tid % 16) * 8;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < k; k0 += kBk) {
    // 128 rows x 8 k of each operand: 1024 values, 4 per thread.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int idx = tid + i * 256;
      int r = idx / kBk, kk = idx % kBk;
      int gr = row0 + r, gc = col0 + r, gk = k0 + kk;
      as[kk][r] = gr < m && gk < k ? x[static_cast<size_t>(gr) * k + gk] : 0.f;
      bs[kk][r] = gc < n && gk < k ? wt[static_cast<size_t>(gc) * k + gk] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBk; ++kk) {
      float a[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = as[kk][tr + i];
#pragma unroll
      for (int j = 0; j < 8; ++j) b[j] = bs[kk][tc + j];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    int r = row0 + tr + i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      int c = col0 + tc + j;
      if (c >= n) continue;
      float v = acc[i][j] + bias[c];
      StoreOut(&y[static_cast<size_t>(r) * n + c], relu && v < 0.f ? 0.f : v);
    }
  }
}

// ---- FP16/BF16 WMMA GEMM: 128x128 block tile, BK 32, 8 warps of 64x32 ----
constexpr int kWk = 32, kPad = 8;

template <typename T, typename Out>
__global__ void __launch_bounds__(256) DenseWmmaKernel(const T* __restrict__ x, const T* __restrict__ wt,
                                                       const float* __restrict__ bias, Out* __restrict__ y, int m,
                                                       int n, int k, bool relu) {
  using namespace nvcuda;
  __shared__ __align__(32) T as[kBm][kWk + kPad];
  __shared__ __align__(32) T bs[kBn][kWk + kPad];
  __shared__ __align__(32) float stage[8][16 * 16];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row0 = blockIdx.y * kBm, col0 = blockIdx.x * kBn;
  const int wr = (warp / 4) * 64, wc = (warp % 4) * 32;  // 2 x 4 warps
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  const bool vec = (k % 8) == 0;
  for (int k0 = 0; k0 < k; k0 += kWk) {
    // Each operand tile is 128 x 32 values = 512 chunks of 8; 2 per thread.
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      int idx = tid + i * 256;
      int r = idx / 4, kk = (idx % 4) * 8;
      int gk = k0 + kk;
      int gr = row0 + r, gc = col0 + r;
      if (vec && gk + 8 <= k) {
        uint4 za = make_uint4(0, 0, 0, 0), zb = za;
        if (gr < m) za = *reinterpret_cast<const uint4*>(x + static_cast<size_t>(gr) * k + gk);
        if (gc < n) zb = *reinterpret_cast<const uint4*>(wt + static_cast<size_t>(gc) * k + gk);
        *reinterpret_cast<uint4*>(&as[r][kk]) = za;
        *reinterpret_cast<uint4*>(&bs[r][kk]) = zb;
      } else {
        for (int e = 0; e < 8; ++e) {
          bool in = gk + e < k;
          as[r][kk + e] = gr < m && in ? x[static_cast<size_t>(gr) * k + gk + e] : T(0.f);
          bs[r][kk + e] = gc < n && in ? wt[static_cast<size_t>(gc) * k + gk + e] : T(0.f);
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kWk; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], &as[wr + i * 16][kk], kWk + kPad);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &bs[wc + j * 16][kk], kWk + kPad);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  // Epilogue through a per-warp 16x16 staging tile: bias, ReLU, convert.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(stage[warp], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        int r = row0 + wr + i * 16 + e / 16, c = col0 + wc + j * 16 + e % 16;
        if (r < m && c < n) {
          float v = stage[warp][e] + bias[c];
          StoreOut(&y[static_cast<size_t>(r) * n + c], relu && v < 0.f ? 0.f : v);
        }
      }
      __syncwarp();
    }
  }
}

template <typename T>
__global__ void ConvertKernel(const float* __restrict__ in, T* __restrict__ out, size_t count) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < count) StoreOut(&out[i], in[i]);
}

}  // namespace

cudaError_t LaunchPreprocess(const uint8_t* pixels, int n, int h, int w, int c, int height, int width, float* out,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  int resized = static_cast<int>(ceil(height * (static_cast<double>(w) / static_cast<double>(h))));
  if (resized > width) resized = width;
  if (resized < 1) resized = 1;
  dim3 block(128), grid((width + 127) / 128, height, n);
  PreprocessKernel<<<grid, block, 0, stream>>>(pixels, n, h, w, c, height, width, resized, out);
  return cudaGetLastError();
}

cudaError_t LaunchDense(DType t, const void* x, const void* weights, const float* bias, void* y, int m, int n, int k,
                        bool relu, bool out_float, cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  dim3 grid((n + kBn - 1) / kBn, (m + kBm - 1) / kBm), block(256);
  switch (t) {
    case DType::kFp32:
      DenseFp32Kernel<float><<<grid, block, 0, stream>>>(static_cast<const float*>(x), static_cast<const float*>(weights),
                                                         bias, static_cast<float*>(y), m, n, k, relu);
      break;
    case DType::kFp16:
      if (out_float)
        DenseWmmaKernel<__half, float><<<grid, block, 0, stream>>>(static_cast<const __half*>(x), static_cast<const __half*>(weights),
                                                                   bias, static_cast<float*>(y), m, n, k, relu);
      else
        DenseWmmaKernel<__half, __half><<<grid, block, 0, stream>>>(static_cast<const __half*>(x), static_cast<const __half*>(weights),
                                                                    bias, static_cast<__half*>(y), m, n, k, relu);
      break;
    case DType::kBf16:
      if (out_float)
        DenseWmmaKernel<__nv_bfloat16, float><<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16*>(x),
                                                                          static_cast<const __nv_bfloat16*>(weights), bias,
                                                                          static_cast<float*>(y), m, n, k, relu);
      else
        DenseWmmaKernel<__nv_bfloat16, __nv_bfloat16><<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16*>(x),
                                                                                  static_cast<const __nv_bfloat16*>(weights), bias,
                                                                                  static_cast<__nv_bfloat16*>(y), m, n, k, relu);
      break;
  }
  return cudaGetLastError();
}

cudaError_t LaunchConvert(DType t, const float* in, void* out, size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  unsigned blocks = static_cast<unsigned>((count + 255) / 256);
  if (t == DType::kFp16) ConvertKernel<__half><<<blocks, 256, 0, stream>>>(in, static_cast<__half*>(out), count);
  else if (t == DType::kBf16) ConvertKernel<__nv_bfloat16><<<blocks, 256, 0, stream>>>(in, static_cast<__nv_bfloat16*>(out), count);
  else return cudaMemcpyAsync(out, in, count * sizeof(float), cudaMemcpyDeviceToDevice, stream);
  return cudaGetLastError();
}

}  // namespace operon_cuda
