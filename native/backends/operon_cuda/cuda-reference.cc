#include "cuda-reference.h"

#include <cmath>
#include <cstring>
#include <fstream>

namespace operon_cuda {

namespace {
constexpr char kMagic[8] = {'O', 'P', 'M', 'L', 'P', 'W', '0', '1'};

template <typename T>
bool ReadPod(std::ifstream& f, T* v, size_t count = 1) {
  f.read(reinterpret_cast<char*>(v), static_cast<std::streamsize>(sizeof(T) * count));
  return static_cast<size_t>(f.gcount()) == sizeof(T) * count;
}
}  // namespace

bool ReadMlpWeights(const std::string& path, MlpWeights* out, std::string* why) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *why = "cannot open MLP weights file '" + path + "'";
    return false;
  }
  char magic[8];
  if (!ReadPod(f, magic, 8) || std::memcmp(magic, kMagic, 8) != 0) {
    *why = "'" + path + "' is not an MLP weights file (magic OPMLPW01 expected)";
    return false;
  }
  uint32_t layers = 0;
  if (!ReadPod(f, &layers) || layers < 1 || layers > 16) {
    *why = "'" + path + "': layer count must be 1..16, got " + std::to_string(layers);
    return false;
  }
  out->dims.assign(layers + 1, 0);
  if (!ReadPod(f, out->dims.data(), layers + 1)) {
    *why = "'" + path + "' is truncated (in the layer widths)";
    return false;
  }
  for (uint32_t d : out->dims) {
    if (d < 1 || d > 65536) {
      *why = "'" + path + "': layer widths must be 1..65536, got " + std::to_string(d);
      return false;
    }
  }
  out->weights.assign(layers, {});
  out->biases.assign(layers, {});
  for (uint32_t l = 0; l < layers; ++l) {
    out->weights[l].resize(static_cast<size_t>(out->dims[l + 1]) * out->dims[l]);
    out->biases[l].resize(out->dims[l + 1]);
    if (!ReadPod(f, out->weights[l].data(), out->weights[l].size()) || !ReadPod(f, out->biases[l].data(), out->biases[l].size())) {
      *why = "'" + path + "' is truncated (layer " + std::to_string(l) + " of " + std::to_string(layers) + ")";
      return false;
    }
  }
  char extra;
  if (f.read(&extra, 1) && f.gcount() == 1) {
    *why = "'" + path + "' has bytes after the last layer (widths and data disagree)";
    return false;
  }
  return true;
}

bool WriteMlpWeights(const std::string& path, const MlpWeights& w, std::string* why) {
  std::ofstream f(path, std::ios::binary);
  if (!f) {
    *why = "cannot write '" + path + "'";
    return false;
  }
  uint32_t layers = static_cast<uint32_t>(w.weights.size());
  f.write(kMagic, 8);
  f.write(reinterpret_cast<const char*>(&layers), 4);
  f.write(reinterpret_cast<const char*>(w.dims.data()), static_cast<std::streamsize>(4 * w.dims.size()));
  for (uint32_t l = 0; l < layers; ++l) {
    f.write(reinterpret_cast<const char*>(w.weights[l].data()), static_cast<std::streamsize>(4 * w.weights[l].size()));
    f.write(reinterpret_cast<const char*>(w.biases[l].data()), static_cast<std::streamsize>(4 * w.biases[l].size()));
  }
  return static_cast<bool>(f);
}

MlpWeights RandomMlp(const std::vector<uint32_t>& dims, uint32_t seed) {
  MlpWeights w;
  w.dims = dims;
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  auto next = [&s]() {  // PCG-style LCG, top bits: uniform in [0, 1)
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  };
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    double bound = 1.0 / std::sqrt(static_cast<double>(dims[l]));
    w.weights.emplace_back(static_cast<size_t>(dims[l + 1]) * dims[l]);
    w.biases.emplace_back(dims[l + 1]);
    for (float& v : w.weights.back()) v = static_cast<float>((2 * next() - 1) * bound);
    for (float& v : w.biases.back()) v = static_cast<float>((2 * next() - 1) * bound);
  }
  return w;
}

float RoundTo(Precision p, float v) {
  if (p == Precision::kFp32 || std::isnan(v)) return v;
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (p == Precision::kBf16) {
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;  // round to nearest even, 8-bit mantissa
    std::memcpy(&v, &bits, 4);
    return v;
  }
  // FP16: 10-bit mantissa, exponent -14..15; subnormals below 2^-14.
  double a = std::fabs(static_cast<double>(v));
  if (a >= 65520.0) return std::copysign(INFINITY, v);
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, -14);
  double ulp = std::ldexp(1.0, exp - 10);
  double r = std::nearbyint(a / ulp) * ulp;  // nearbyint: ties to even in the default rounding mode
  return static_cast<float>(std::copysign(r, static_cast<double>(v)));
}

void MlpReference(const MlpWeights& w, Precision p, const float* x, int batch, float* out) {
  const size_t layers = w.weights.size();
  std::vector<float> in, next;
  for (int b = 0; b < batch; ++b) {
    in.assign(x + static_cast<size_t>(b) * w.dims[0], x + static_cast<size_t>(b + 1) * w.dims[0]);
    for (size_t l = 0; l < layers; ++l) {
      const uint32_t n_in = w.dims[l], n_out = w.dims[l + 1];
      next.assign(n_out, 0.f);
      for (uint32_t o = 0; o < n_out; ++o) {
        double acc = 0;
        const float* row = w.weights[l].data() + static_cast<size_t>(o) * n_in;
        for (uint32_t i = 0; i < n_in; ++i) acc += static_cast<double>(RoundTo(p, row[i])) * RoundTo(p, in[i]);
        float v = static_cast<float>(acc + w.biases[l][o]);
        next[o] = l + 1 < layers && v < 0 ? 0.f : v;
      }
      in.swap(next);
    }
    std::memcpy(out + static_cast<size_t>(b) * w.dims[layers], in.data(), sizeof(float) * w.dims[layers]);
  }
}

namespace {
struct Tap {
  int low, high;
  double weight;
};
Tap AxisTap(int source, int target, int i) {
  double scale = static_cast<double>(source) / static_cast<double>(target);
  double position = (i + 0.5) * scale - 0.5;
  double low = std::floor(position);
  double weight = position - low;
  int l = static_cast<int>(low);
  if (l < 0) { l = 0; weight = 0; }
  if (l >= source - 1) { l = source - 1; weight = 0; }
  return Tap{l, l + 1 < source ? l + 1 : source - 1, weight};
}
}  // namespace

void PreprocessReference(const uint8_t* pixels, int n, int h, int w, int c, int height, int width, float* out) {
  int resized = static_cast<int>(std::ceil(height * (static_cast<double>(w) / static_cast<double>(h))));
  if (resized > width) resized = width;
  if (resized < 1) resized = 1;
  const size_t plane = static_cast<size_t>(height) * width;
  for (int k = 0; k < n; ++k) {
    const uint8_t* img = pixels + static_cast<size_t>(k) * h * w * c;
    float* o = out + static_cast<size_t>(k) * 3 * plane;
    for (int dy = 0; dy < height; ++dy) {
      Tap ty = AxisTap(h, height, dy);
      for (int dx = 0; dx < width; ++dx) {
        for (int ch = 0; ch < 3; ++ch) {
          float value = 0.f;
          if (dx < resized) {
            Tap tx = AxisTap(w, resized, dx);
            auto at = [&](int y, int x) { return static_cast<double>(img[(static_cast<size_t>(y) * w + x) * c + ch]); };
            double top = at(ty.low, tx.low) * (1 - tx.weight) + at(ty.low, tx.high) * tx.weight;
            double bottom = at(ty.high, tx.low) * (1 - tx.weight) + at(ty.high, tx.high) * tx.weight;
            double v = top * (1 - ty.weight) + bottom * ty.weight;
            double r = std::floor(v);
            int q = static_cast<int>((v - r) >= 0.5 ? r + 1 : r);
            value = static_cast<float>((q / 255.0 - 0.5) / 0.5);
          }
          // Planes in BGR order: channel ch (R=0, G=1, B=2) goes to plane 2 - ch.
          o[(2 - ch) * plane + static_cast<size_t>(dy) * width + dx] = value;
        }
      }
    }
  }
}

}  // namespace operon_cuda
