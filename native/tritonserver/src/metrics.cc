// Custom metrics (TRITONSERVER_MetricFamily* / TRITONSERVER_Metric*): a
// process-wide registry the host reads as Prometheus text
// (OperonHostMetricsText) and appends to its own /metrics.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "internal.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

using operon::MakeError;
using operon::NullArgument;

struct TRITONSERVER_MetricFamily {
  TRITONSERVER_MetricKind kind;
  std::string name;
  std::string description;
  int metrics = 0;  // live metrics of this handle, guarded by the registry mutex
};

struct TRITONSERVER_MetricArgs {
  std::vector<double> buckets;
  bool histogram = false;
};

struct TRITONSERVER_Metric {
  TRITONSERVER_MetricFamily* family;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;                // counter/gauge; histogram: sum
  std::vector<double> buckets;     // histogram upper bounds
  std::vector<uint64_t> counts;    // histogram: per bucket (not cumulative)
  uint64_t observations = 0;
};

namespace {

std::mutex registry_mutex;
std::vector<TRITONSERVER_MetricFamily*>& Families() {
  static auto* families = new std::vector<TRITONSERVER_MetricFamily*>();
  return *families;
}
std::vector<TRITONSERVER_Metric*>& Metrics() {
  static auto* metrics = new std::vector<TRITONSERVER_Metric*>();
  return *metrics;
}

bool ValidName(const char* name) {
  if (name == nullptr || *name == '\0') return false;
  for (const char* c = name; *c; ++c) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' || *c == ':' ||
              (c != name && *c >= '0' && *c <= '9');
    if (!ok) return false;
  }
  return true;
}

const char* KindName(TRITONSERVER_MetricKind kind) {
  switch (kind) {
    case TRITONSERVER_METRIC_KIND_COUNTER: return "counter";
    case TRITONSERVER_METRIC_KIND_GAUGE: return "gauge";
    default: return "histogram";
  }
}

std::string FormatNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string Labels(const TRITONSERVER_Metric* m, const std::string& extra = "") {
  std::string out;
  for (const auto& l : m->labels) {
    if (!out.empty()) out += ",";
    out += l.first + "=\"" + EscapeLabel(l.second) + "\"";
  }
  if (!extra.empty()) {
    if (!out.empty()) out += ",";
    out += extra;
  }
  return out.empty() ? "" : "{" + out + "}";
}

TRITONSERVER_Error* NewMetric(const char* fn, TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
                              const TRITONSERVER_Parameter** labels, uint64_t label_count,
                              const TRITONSERVER_MetricArgs* args) {
  if (metric == nullptr) return NullArgument(fn, "metric");
  if (family == nullptr) return NullArgument(fn, "family");
  if (label_count > 0 && labels == nullptr) return NullArgument(fn, "labels");
  bool histogram = family->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM;
  if (histogram && (args == nullptr || !args->histogram))
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     std::string(fn) + ": histogram family '" + family->name +
                         "' needs TRITONSERVER_MetricArgsSetHistogram buckets (use TRITONSERVER_MetricNewWithArgs)");
  if (!histogram && args != nullptr && args->histogram)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     std::string(fn) + ": histogram buckets given for " + KindName(family->kind) + " family '" +
                         family->name + "'");
  auto* m = new TRITONSERVER_Metric();
  m->family = family;
  for (uint64_t i = 0; i < label_count; ++i) {
    const TRITONSERVER_Parameter* p = labels[i];
    if (p == nullptr || p->type != TRITONSERVER_PARAMETER_STRING) {
      delete m;
      return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": label " + std::to_string(i) +
                                                           " must be a STRING parameter");
    }
    m->labels.emplace_back(p->name, p->string_value);
  }
  if (histogram) {
    m->buckets = args->buckets;
    m->counts.assign(m->buckets.size(), 0);
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  family->metrics += 1;
  Metrics().push_back(m);
  *metric = m;
  return nullptr;
}

}  // namespace

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricFamilyNew(TRITONSERVER_MetricFamily** family,
                                                        const TRITONSERVER_MetricKind kind, const char* name,
                                                        const char* description) {
  const char* fn = "TRITONSERVER_MetricFamilyNew";
  if (family == nullptr) return NullArgument(fn, "family");
  if (!ValidName(name))
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                     std::string(fn) + ": '" + (name ? name : "") +
                         "' is not a valid metric name (letters, digits, '_' and ':', not starting with a digit)");
  if (kind != TRITONSERVER_METRIC_KIND_COUNTER && kind != TRITONSERVER_METRIC_KIND_GAUGE &&
      kind != TRITONSERVER_METRIC_KIND_HISTOGRAM)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": unknown metric kind " + std::to_string(kind));
  std::string desc = description ? description : "";
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (auto* f : Families()) {
    if (f->name == name && (f->kind != kind || f->description != desc))
      return MakeError(TRITONSERVER_ERROR_ALREADY_EXISTS,
                       std::string(fn) + ": metric family '" + name +
                           "' already exists with another kind or description");
  }
  auto* f = new TRITONSERVER_MetricFamily{kind, name, desc, 0};
  Families().push_back(f);
  *family = f;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricFamilyDelete(TRITONSERVER_MetricFamily* family) {
  if (family == nullptr) return NullArgument("TRITONSERVER_MetricFamilyDelete", "family");
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (family->metrics > 0)
    return MakeError(TRITONSERVER_ERROR_INTERNAL, "TRITONSERVER_MetricFamilyDelete: family '" + family->name +
                                                      "' still has " + std::to_string(family->metrics) +
                                                      " metric(s); delete them first");
  auto& fs = Families();
  fs.erase(std::remove(fs.begin(), fs.end(), family), fs.end());
  delete family;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_GetMetricFamilyKind(TRITONSERVER_MetricFamily* family,
                                                            TRITONSERVER_MetricKind* kind) {
  if (family == nullptr || kind == nullptr)
    return NullArgument("TRITONSERVER_GetMetricFamilyKind", family == nullptr ? "family" : "kind");
  *kind = family->kind;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricArgsNew(TRITONSERVER_MetricArgs** args) {
  if (args == nullptr) return NullArgument("TRITONSERVER_MetricArgsNew", "args");
  *args = new TRITONSERVER_MetricArgs();
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricArgsSetHistogram(TRITONSERVER_MetricArgs* args, const double* buckets,
                                                               const uint64_t buckets_count) {
  if (args == nullptr) return NullArgument("TRITONSERVER_MetricArgsSetHistogram", "args");
  if (buckets == nullptr && buckets_count > 0) return NullArgument("TRITONSERVER_MetricArgsSetHistogram", "buckets");
  std::vector<double> b(buckets, buckets + buckets_count);
  for (size_t i = 1; i < b.size(); ++i)
    if (!(b[i - 1] < b[i]))
      return MakeError(TRITONSERVER_ERROR_INVALID_ARG,
                       "TRITONSERVER_MetricArgsSetHistogram: bucket bounds must increase strictly");
  args->buckets = std::move(b);
  args->histogram = true;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricArgsDelete(TRITONSERVER_MetricArgs* args) {
  delete args;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricNew(TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
                                                  const TRITONSERVER_Parameter** labels, const uint64_t label_count) {
  return NewMetric("TRITONSERVER_MetricNew", metric, family, labels, label_count, nullptr);
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricNewWithArgs(TRITONSERVER_Metric** metric,
                                                          TRITONSERVER_MetricFamily* family,
                                                          const TRITONSERVER_Parameter** labels,
                                                          const uint64_t label_count,
                                                          const TRITONSERVER_MetricArgs* args) {
  return NewMetric("TRITONSERVER_MetricNewWithArgs", metric, family, labels, label_count, args);
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricDelete(TRITONSERVER_Metric* metric) {
  if (metric == nullptr) return NullArgument("TRITONSERVER_MetricDelete", "metric");
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto& ms = Metrics();
  ms.erase(std::remove(ms.begin(), ms.end(), metric), ms.end());
  metric->family->metrics -= 1;
  delete metric;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricValue(TRITONSERVER_Metric* metric, double* value) {
  if (metric == nullptr || value == nullptr)
    return NullArgument("TRITONSERVER_MetricValue", metric == nullptr ? "metric" : "value");
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (metric->family->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM)
    return operon::Unsupported("TRITONSERVER_MetricValue", "a histogram has no single value");
  *value = metric->value;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricIncrement(TRITONSERVER_Metric* metric, double value) {
  if (metric == nullptr) return NullArgument("TRITONSERVER_MetricIncrement", "metric");
  std::lock_guard<std::mutex> lock(registry_mutex);
  TRITONSERVER_MetricKind kind = metric->family->kind;
  if (kind == TRITONSERVER_METRIC_KIND_HISTOGRAM)
    return MakeError(TRITONSERVER_ERROR_UNSUPPORTED, "TRITONSERVER_MetricIncrement: '" + metric->family->name +
                                                         "' is a histogram; use TRITONSERVER_MetricObserve");
  if (kind == TRITONSERVER_METRIC_KIND_COUNTER && value < 0)
    return MakeError(TRITONSERVER_ERROR_INVALID_ARG, "TRITONSERVER_MetricIncrement: counter '" +
                                                         metric->family->name + "' cannot be decremented");
  metric->value += value;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricSet(TRITONSERVER_Metric* metric, double value) {
  if (metric == nullptr) return NullArgument("TRITONSERVER_MetricSet", "metric");
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (metric->family->kind != TRITONSERVER_METRIC_KIND_GAUGE)
    return MakeError(TRITONSERVER_ERROR_UNSUPPORTED, "TRITONSERVER_MetricSet: '" + metric->family->name +
                                                         "' is a " + KindName(metric->family->kind) +
                                                         "; only gauges can be set");
  metric->value = value;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_MetricObserve(TRITONSERVER_Metric* metric, double value) {
  if (metric == nullptr) return NullArgument("TRITONSERVER_MetricObserve", "metric");
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (metric->family->kind != TRITONSERVER_METRIC_KIND_HISTOGRAM)
    return MakeError(TRITONSERVER_ERROR_UNSUPPORTED, "TRITONSERVER_MetricObserve: '" + metric->family->name +
                                                         "' is not a histogram");
  for (size_t i = 0; i < metric->buckets.size(); ++i) {
    if (value <= metric->buckets[i]) {
      metric->counts[i] += 1;
      break;
    }
  }
  metric->value += value;
  metric->observations += 1;
  return nullptr;
}

EXPORT TRITONSERVER_Error* TRITONSERVER_GetMetricKind(TRITONSERVER_Metric* metric, TRITONSERVER_MetricKind* kind) {
  if (metric == nullptr || kind == nullptr)
    return NullArgument("TRITONSERVER_GetMetricKind", metric == nullptr ? "metric" : "kind");
  *kind = metric->family->kind;
  return nullptr;
}

EXPORT OperonHostError* OperonHostMetricsText(char** text) {
  if (text == nullptr) return operon::HostError(OPERON_HOST_ERROR_INVALID_ARG, "OperonHostMetricsText: text is NULL");
  std::string out;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    std::vector<std::string> done;
    for (auto* f : Families()) {
      if (std::find(done.begin(), done.end(), f->name) != done.end()) continue;
      done.push_back(f->name);
      out += "# HELP " + f->name + " " + f->description + "\n";
      out += "# TYPE " + f->name + " " + KindName(f->kind) + "\n";
      for (auto* m : Metrics()) {
        if (m->family->name != f->name) continue;
        if (f->kind != TRITONSERVER_METRIC_KIND_HISTOGRAM) {
          out += f->name + Labels(m) + " " + FormatNumber(m->value) + "\n";
          continue;
        }
        uint64_t cumulative = 0;
        for (size_t i = 0; i < m->buckets.size(); ++i) {
          cumulative += m->counts[i];
          out += f->name + "_bucket" + Labels(m, "le=\"" + FormatNumber(m->buckets[i]) + "\"") + " " +
                 std::to_string(cumulative) + "\n";
        }
        out += f->name + "_bucket" + Labels(m, "le=\"+Inf\"") + " " + std::to_string(m->observations) + "\n";
        out += f->name + "_sum" + Labels(m) + " " + FormatNumber(m->value) + "\n";
        out += f->name + "_count" + Labels(m) + " " + std::to_string(m->observations) + "\n";
      }
    }
  }
  *text = static_cast<char*>(std::malloc(out.size() + 1));
  std::memcpy(*text, out.c_str(), out.size() + 1);
  return nullptr;
}
