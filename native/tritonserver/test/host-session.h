// A host for libtritonserver.so's embedding API (operon/host.h), as the
// worker's N-API addon drives it, without Node: load a backend, create a
// model and an instance, execute batches and collect every response,
// release and statistic the library reports. Used by operon-backend-host
// (the C++ test suite and the command that runs Triton's own backends).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "operon/host.h"

namespace host {

// One tensor given to or received from a backend: its bytes in `data`, or,
// when it stayed on a GPU (memory_type GPU), a region of that GPU's pool in
// the library (device_base, device_bytes), which the host frees with
// OperonHostDeviceFree once the step that reads it has released its request.
struct Tensor {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  std::vector<char> data;
  uint32_t memory_type = OPERON_HOST_MEMORY_CPU;
  int64_t device = 0;
  void* device_base = nullptr;
  uint64_t device_bytes = 0;
};

struct Response {
  std::vector<Tensor> outputs;
  std::vector<std::pair<std::string, std::string>> parameters;  // name, value as text
  bool has_error = false;
  uint32_t error_code = 0;
  std::string error_message;
  uint32_t flags = 0;
  bool empty = false;
};

// What one request saw. The library calls back with a pointer to it.
struct RequestRecord {
  int index = 0;
  bool cancelled = false;
  bool released = false;
  uint32_t release_flags = 0;
  bool final_seen = false;
  std::vector<Response> responses;
  int request_stats = 0;
  // The host's plan for this request's outputs (what the gateway's operator
  // planner decides): >= 0 keeps an output the backend asks to have on that
  // GPU there (the next step runs on the same GPU); -1 gives host memory.
  int32_t keep_on_device = -1;
};

class Session {
 public:
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::unique_ptr<RequestRecord>> records;
  int batch_stats = 0;
  uint64_t batch_size_total = 0;
  int live_allocations = 0;
  int device_allocations = 0;  // outputs given device memory (delivered or not)

  OperonHostCallbacks Callbacks() {
    OperonHostCallbacks cb{};
    cb.user = this;
    cb.allocate = &Session::Allocate;
    cb.release_allocation = &Session::ReleaseAllocation;
    cb.response = &Session::OnResponse;
    cb.released = &Session::OnReleased;
    cb.is_cancelled = &Session::IsCancelled;
    cb.statistics = &Session::OnStatistics;
    return cb;
  }

  RequestRecord* NewRecord() {
    std::lock_guard<std::mutex> lock(mutex);
    records.push_back(std::make_unique<RequestRecord>());
    records.back()->index = static_cast<int>(records.size()) - 1;
    return records.back().get();
  }

  void Cancel(RequestRecord* r) {
    std::lock_guard<std::mutex> lock(mutex);
    r->cancelled = true;
  }

  // Waits until every record is released and has its final response.
  bool WaitAllDone(int timeout_ms) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
      for (auto& r : records)
        if (!r->released || !r->final_seen) return false;
      return true;
    });
  }

  // Waits until `r` has at least `n` responses.
  bool WaitResponses(RequestRecord* r, size_t n, int timeout_ms) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return r->responses.size() >= n; });
  }

 private:
  // The allocation token of device memory (host memory's token is its base).
  static void* DeviceToken() {
    static char token;
    return &token;
  }

  static OperonHostError* Allocate(void* user, void* request_user, const char*, const char*, const int64_t*, uint32_t,
                                   uint64_t byte_size, uint32_t preferred_type, int64_t preferred_id, void** base,
                                   uint32_t* memory_type, int64_t* memory_type_id, void** allocation) {
    auto* self = static_cast<Session*>(user);
    auto* record = static_cast<RequestRecord*>(request_user);
    // Device memory only when the backend asks for it on the GPU the plan keeps this request's outputs on.
    if (preferred_type == OPERON_HOST_MEMORY_GPU && record != nullptr && record->keep_on_device >= 0 &&
        preferred_id == record->keep_on_device) {
      OperonHostError* e = OperonHostDeviceAllocate(record->keep_on_device, byte_size, base);
      if (e != nullptr) return e;
      *memory_type = OPERON_HOST_MEMORY_GPU;
      *memory_type_id = record->keep_on_device;
      *allocation = DeviceToken();
      std::lock_guard<std::mutex> lock(self->mutex);
      self->live_allocations += 1;
      self->device_allocations += 1;
      return nullptr;
    }
    *base = std::malloc(byte_size == 0 ? 1 : byte_size);
    if (*base == nullptr) return OperonHostErrorNew(OPERON_HOST_ERROR_UNAVAILABLE, "test host: out of memory");
    *memory_type = OPERON_HOST_MEMORY_CPU;
    *memory_type_id = 0;
    *allocation = *base;
    std::lock_guard<std::mutex> lock(self->mutex);
    self->live_allocations += 1;
    return nullptr;
  }

  static void ReleaseAllocation(void* user, void* request_user, void* base, void* allocation) {
    auto* self = static_cast<Session*>(user);
    if (allocation == DeviceToken())
      OperonHostErrorDelete(OperonHostDeviceFree(static_cast<RequestRecord*>(request_user)->keep_on_device, base));
    else
      std::free(base);
    std::lock_guard<std::mutex> lock(self->mutex);
    self->live_allocations -= 1;
  }

  static void OnResponse(void* user, void* request_user, const OperonHostResponse* r) {
    auto* self = static_cast<Session*>(user);
    auto* record = static_cast<RequestRecord*>(request_user);
    Response copy;
    for (uint32_t i = 0; i < r->output_count; ++i) {
      const OperonHostOutput& o = r->outputs[i];
      Tensor t;
      t.name = o.name;
      t.datatype = o.datatype;
      t.shape.assign(o.shape, o.shape + o.dims_count);
      if (o.memory_type == OPERON_HOST_MEMORY_GPU) {
        // Stays on the device for the next step; an error response's outputs go straight back to the pool.
        if (r->error != nullptr) {
          OperonHostErrorDelete(OperonHostDeviceFree(static_cast<int32_t>(o.memory_type_id), o.base));
        } else {
          t.memory_type = OPERON_HOST_MEMORY_GPU;
          t.device = o.memory_type_id;
          t.device_base = o.base;
          t.device_bytes = o.byte_size;
        }
      } else {
        t.data.assign(static_cast<const char*>(o.base), static_cast<const char*>(o.base) + o.byte_size);
        std::free(o.base);  // the host owns delivered memory
      }
      copy.outputs.push_back(std::move(t));
    }
    for (uint32_t i = 0; i < r->parameter_count; ++i) {
      const OperonHostParameter& p = r->parameters[i];
      std::string value;
      switch (p.type) {
        case OPERON_HOST_PARAMETER_STRING: value = p.string_value; break;
        case OPERON_HOST_PARAMETER_INT: value = std::to_string(p.int_value); break;
        case OPERON_HOST_PARAMETER_BOOL: value = p.bool_value ? "true" : "false"; break;
        case OPERON_HOST_PARAMETER_DOUBLE: value = std::to_string(p.double_value); break;
        default: value = "<" + std::to_string(p.byte_size) + " bytes>"; break;
      }
      copy.parameters.emplace_back(p.name, value);
    }
    if (r->error != nullptr) {
      copy.has_error = true;
      copy.error_code = r->error->code;
      copy.error_message = r->error->message;
    }
    copy.flags = r->flags;
    copy.empty = r->empty != 0;
    std::lock_guard<std::mutex> lock(self->mutex);
    self->live_allocations -= static_cast<int>(r->output_count);
    if (r->flags & OPERON_HOST_RESPONSE_FINAL) record->final_seen = true;
    record->responses.push_back(std::move(copy));
    self->changed.notify_all();
  }

  static void OnReleased(void* user, void* request_user, uint32_t flags) {
    auto* self = static_cast<Session*>(user);
    auto* record = static_cast<RequestRecord*>(request_user);
    std::lock_guard<std::mutex> lock(self->mutex);
    record->released = true;
    record->release_flags = flags;
    self->changed.notify_all();
  }

  static int32_t IsCancelled(void* user, void* request_user) {
    auto* self = static_cast<Session*>(user);
    std::lock_guard<std::mutex> lock(self->mutex);
    return static_cast<RequestRecord*>(request_user)->cancelled ? 1 : 0;
  }

  static void OnStatistics(void* user, const OperonHostStatistics* s) {
    auto* self = static_cast<Session*>(user);
    std::lock_guard<std::mutex> lock(self->mutex);
    if (s->kind == OPERON_HOST_STATS_BATCH) {
      self->batch_stats += 1;
      self->batch_size_total += s->batch_size;
    } else if (s->kind == OPERON_HOST_STATS_REQUEST && s->request_user != nullptr) {
      static_cast<RequestRecord*>(s->request_user)->request_stats += 1;
    }
  }
};

// A request's inputs with the host structs pointing into them.
struct RequestSpec {
  std::string id;
  std::vector<Tensor> inputs;
  std::vector<std::string> requested_outputs;
  RequestRecord* record = nullptr;

  // Filled by Build(); valid while this spec lives.
  std::vector<OperonHostBuffer> buffers;
  std::vector<OperonHostInput> host_inputs;
  std::vector<const char*> output_names;
  OperonHostRequest request{};

  const OperonHostRequest& Build() {
    buffers.clear();
    host_inputs.clear();
    output_names.clear();
    buffers.reserve(inputs.size());
    for (const Tensor& t : inputs)
      buffers.push_back(t.memory_type == OPERON_HOST_MEMORY_GPU
                            ? OperonHostBuffer{t.device_base, t.device_bytes, OPERON_HOST_MEMORY_GPU, t.device}
                            : OperonHostBuffer{t.data.data(), t.data.size(), OPERON_HOST_MEMORY_CPU, 0});
    for (size_t i = 0; i < inputs.size(); ++i) {
      OperonHostInput in{};
      in.name = inputs[i].name.c_str();
      in.datatype = inputs[i].datatype.c_str();
      in.shape = inputs[i].shape.data();
      in.dims_count = static_cast<uint32_t>(inputs[i].shape.size());
      in.buffers = &buffers[i];
      in.buffer_count = 1;
      host_inputs.push_back(in);
    }
    for (const auto& o : requested_outputs) output_names.push_back(o.c_str());
    request = OperonHostRequest{};
    request.user = record;
    request.id = id.c_str();
    request.inputs = host_inputs.data();
    request.input_count = static_cast<uint32_t>(host_inputs.size());
    request.requested_outputs = output_names.data();
    request.requested_output_count = static_cast<uint32_t>(output_names.size());
    return request;
  }
};

// Owns the error and returns its text ("" for success).
inline std::string Take(OperonHostError* e, uint32_t* code = nullptr) {
  if (e == nullptr) return "";
  std::string m = e->message ? e->message : "";
  if (code) *code = e->code;
  OperonHostErrorDelete(e);
  return m;
}

template <typename T>
Tensor MakeTensor(const std::string& name, const std::string& datatype, std::vector<int64_t> shape,
                  const std::vector<T>& values) {
  Tensor t{name, datatype, std::move(shape), {}};
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

// BYTES elements, each with its 4-byte little-endian length (Triton's layout).
inline Tensor MakeBytes(const std::string& name, std::vector<int64_t> shape, const std::vector<std::string>& items) {
  Tensor t{name, "BYTES", std::move(shape), {}};
  for (const auto& s : items) {
    uint32_t n = static_cast<uint32_t>(s.size());
    const char* p = reinterpret_cast<const char*>(&n);
    t.data.insert(t.data.end(), p, p + 4);
    t.data.insert(t.data.end(), s.begin(), s.end());
  }
  return t;
}

}  // namespace host
