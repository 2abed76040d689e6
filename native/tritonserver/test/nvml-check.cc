// `operon-backend-host nvml-check <libnvidia-ml.so.1>`: Operon's NVML reader
// (native/src/nvml-reader.h, the code behind the gateway's nv_gpu_* metrics)
// on a host without Node. The device check runs it on the GPU host against
// the driver's library, so the hand-written NVML declarations are checked
// against the real ABI; without a GPU it runs against the fake library
// (native/test-fixtures/fake-nvml.cc). Reads every device twice, prints the
// readings in Triton's units, and fails when one is out of range: a UUID that
// is not GPU-..., utilization outside 0..1, used memory above total, power
// above 4 × its limit, energy going backwards.
#include <cstdio>
#include <string>
#include <vector>

#include "nvml-reader.h"

namespace {

std::string Value(const std::optional<double>& value, double scale, const char* unit) {
  if (!value.has_value()) return "n/a";
  char text[64];
  std::snprintf(text, sizeof text, "%.3f %s", *value / scale, unit);
  return text;
}

}  // namespace

int NvmlCheck(const std::string& library) {
  unsigned int count = 0;
  std::string error;
  if (!operon_nvml::Open(library, &count, &error)) {
    std::printf("nvml-check: FAIL %s\n", error.c_str());
    return 1;
  }
  std::vector<operon_nvml::DeviceSample> first;
  std::vector<operon_nvml::DeviceSample> second;
  if (!operon_nvml::Sample(&first, &error) || !operon_nvml::Sample(&second, &error)) {
    std::printf("nvml-check: FAIL %s\n", error.c_str());
    operon_nvml::Close();
    return 1;
  }
  operon_nvml::Close();
  int failures = 0;
  auto fail = [&](const operon_nvml::DeviceSample& device, const char* what) {
    std::printf("nvml-check: FAIL device %u (%s): %s\n", device.index, device.uuid.c_str(), what);
    ++failures;
  };
  std::printf("nvml-check: %u device(s) from %s\n", count, library.c_str());
  if (first.size() != count) {
    std::printf("nvml-check: FAIL %zu of %u devices read\n", first.size(), count);
    ++failures;
  }
  for (size_t i = 0; i < second.size(); ++i) {
    const operon_nvml::DeviceSample& d = second[i];
    std::printf("  %u %s utilization %s, memory %s of %s, power %s of %s, energy %s\n", d.index, d.uuid.c_str(),
                Value(d.utilization, 0.01, "%").c_str(), Value(d.memory_used_bytes, 1 << 30, "GiB").c_str(),
                Value(d.memory_total_bytes, 1 << 30, "GiB").c_str(), Value(d.power_usage_watts, 1, "W").c_str(),
                Value(d.power_limit_watts, 1, "W").c_str(), Value(d.energy_joules, 1, "J").c_str());
    if (d.uuid.rfind("GPU-", 0) != 0) fail(d, "UUID does not start with GPU-");
    if (d.utilization && (*d.utilization < 0 || *d.utilization > 1)) fail(d, "utilization outside 0..1");
    if (!d.memory_total_bytes || *d.memory_total_bytes <= 0) fail(d, "no total memory");
    if (d.memory_total_bytes && d.memory_used_bytes && *d.memory_used_bytes > *d.memory_total_bytes)
      fail(d, "used memory above total");
    if (d.power_usage_watts && d.power_limit_watts && *d.power_usage_watts > 4 * *d.power_limit_watts)
      fail(d, "power above 4x its limit (units wrong?)");
    if (i < first.size() && d.energy_joules && first[i].energy_joules && *d.energy_joules < *first[i].energy_joules)
      fail(d, "energy went backwards");
  }
  std::printf("nvml-check: %s\n", failures == 0 ? "passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
