// operon_gpu_identity: the GPU tests' backend. Like operon_identity, every
// input INPUTn is answered as OUTPUTn with the same datatype, shape and
// bytes, but it runs on GPUs only (KIND_GPU) and works the way a CUDA backend
// does with Triton's memory types: it asks for its outputs in device memory
// (TRITONSERVER_MEMORY_GPU on its instance's GPU), reads inputs wherever they
// are (host or device memory), and moves the bytes with the CUDA driver API
// (cuMemcpyHtoD / DtoD / DtoH, loaded at run time through cuda-driver.h),
// never touching device memory from the CPU.
//
// It exists so that device-resident tensors between the steps of an operator
// can be tested end to end on hosts without a GPU, against the fake driver
// (native/test-fixtures/fake-cuda-driver.cc, OPERON_CUDA_DRIVER_LIB), where
// operon_cuda (CUDA runtime, real kernels) cannot run. On a GPU host it runs
// on the real driver unchanged.
//
// Every response carries the parameters "input_memory" and "output_memory"
// (the memory types it saw and got, e.g. "GPU:0"), which the tests check.
#include <cstring>
#include <string>
#include <vector>

#include "backend-execute.h"
#include "cuda-driver.h"
#include "triton/core/tritonbackend.h"

namespace {

namespace cu = operon_cuda_driver;


TRITONSERVER_Error* Error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, ("operon_gpu_identity: " + message).c_str());
}

struct InstanceState {
  int device = 0;
};

std::string MemoryName(TRITONSERVER_MemoryType type, int64_t id) {
  return std::string(TRITONSERVER_MemoryTypeString(type)) + (type == TRITONSERVER_MEMORY_GPU ? ":" + std::to_string(id) : "");
}

// Copies `bytes` from src (of type src_type) to dst (of type dst_type) with the driver when either side is device memory.
TRITONSERVER_Error* Copy(const cu::Scope& scope, void* dst, bool dst_gpu, const void* src, bool src_gpu, size_t bytes) {
  if (bytes == 0) return nullptr;
  cu::CUresult r = cu::CUDA_SUCCESS;
  const char* call = "memcpy";
  if (src_gpu && dst_gpu) {
    call = "cuMemcpyDtoD";
    r = scope.api().MemcpyDtoD(reinterpret_cast<cu::CUdeviceptr>(dst), reinterpret_cast<cu::CUdeviceptr>(src), bytes);
  } else if (src_gpu) {
    call = "cuMemcpyDtoH";
    r = scope.api().MemcpyDtoH(dst, reinterpret_cast<cu::CUdeviceptr>(src), bytes);
  } else if (dst_gpu) {
    call = "cuMemcpyHtoD";
    r = scope.api().MemcpyHtoD(reinterpret_cast<cu::CUdeviceptr>(dst), src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
  if (r != cu::CUDA_SUCCESS) return Error(TRITONSERVER_ERROR_INTERNAL, cu::Describe(call, r));
  return nullptr;
}

// Answers one request: OUTPUTn from INPUTn for every requested output.
TRITONSERVER_Error* Answer(const InstanceState& st, TRITONBACKEND_Request* request, TRITONBACKEND_Response* response) {
  cu::Scope scope(st.device);
  if (!scope.error.empty()) return Error(TRITONSERVER_ERROR_UNAVAILABLE, scope.error);
  uint32_t outputs = 0;
  RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &outputs));
  std::string input_memory, output_memory;
  for (uint32_t o = 0; o < outputs; ++o) {
    const char* output_name;
    RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(request, o, &output_name));
    if (std::strncmp(output_name, "OUTPUT", 6) != 0)
      return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("unknown output '") + output_name + "' (OUTPUTn answers INPUTn)");
    const std::string input_name = std::string("INPUT") + (output_name + 6);
    TRITONBACKEND_Input* input;
    if (TRITONSERVER_Error* e = TRITONBACKEND_RequestInput(request, input_name.c_str(), &input)) {
      TRITONSERVER_ErrorDelete(e);
      return Error(TRITONSERVER_ERROR_INVALID_ARG, "output '" + std::string(output_name) + "' needs input '" + input_name + "'");
    }
    TRITONSERVER_DataType datatype;
    const int64_t* shape;
    uint32_t dims, buffers;
    uint64_t size;
    RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, nullptr, &datatype, &shape, &dims, &size, &buffers));
    if (datatype == TRITONSERVER_TYPE_BYTES)
      return Error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + input_name + "' is BYTES; this backend copies fixed-size tensors only");
    TRITONBACKEND_Output* output;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, output_name, datatype, shape, dims));
    void* dst;
    TRITONSERVER_MemoryType dst_type = TRITONSERVER_MEMORY_GPU;  // asked for; the host may give host memory instead
    int64_t dst_id = st.device;
    RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &dst, size, &dst_type, &dst_id));
    if (dst_type == TRITONSERVER_MEMORY_GPU && dst_id != st.device)
      return Error(TRITONSERVER_ERROR_INTERNAL, "output '" + std::string(output_name) + "' got GPU " + std::to_string(dst_id) +
                                                    " memory, this instance runs on GPU " + std::to_string(st.device));
    uint64_t offset = 0;
    for (uint32_t b = 0; b < buffers; ++b) {
      const void* src;
      uint64_t bytes;
      TRITONSERVER_MemoryType src_type = TRITONSERVER_MEMORY_CPU;
      int64_t src_id = 0;
      RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &src, &bytes, &src_type, &src_id));
      if (src_type == TRITONSERVER_MEMORY_GPU && src_id != st.device)
        return Error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + input_name + "' is on GPU " + std::to_string(src_id) +
                                                         ", this instance runs on GPU " + std::to_string(st.device));
      if (offset + bytes > size) return Error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + input_name + "' has more bytes than its size");
      RETURN_IF_ERROR(Copy(scope, static_cast<char*>(dst) + offset, dst_type == TRITONSERVER_MEMORY_GPU, src,
                           src_type == TRITONSERVER_MEMORY_GPU, bytes));
      offset += bytes;
      if (b == 0) input_memory += (input_memory.empty() ? "" : ",") + MemoryName(src_type, src_id);
    }
    output_memory += (output_memory.empty() ? "" : ",") + MemoryName(dst_type, dst_id);
  }
  RETURN_IF_ERROR(TRITONBACKEND_ResponseSetStringParameter(response, "input_memory", input_memory.c_str()));
  RETURN_IF_ERROR(TRITONBACKEND_ResponseSetStringParameter(response, "output_memory", output_memory.c_str()));
  return nullptr;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance* instance) {
  TRITONSERVER_InstanceGroupKind kind;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceKind(instance, &kind));
  const char* name = "";
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("instance '") + name + "' is " +
                                                     TRITONSERVER_InstanceGroupKindString(kind) +
                                                     "; this backend runs on GPUs only: use instance_group { kind: KIND_GPU }");
  int32_t device = 0;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &device));
  // Refused here, at load, when the driver or the GPU is missing: a KIND_GPU instance that cannot run on
  // this host is a config this host cannot serve (INVALID_ARG, as operon_cuda answers for a missing GPU).
  cu::Scope scope(device);
  if (!scope.error.empty())
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("instance '") + name + "' on GPU " + std::to_string(device) + ": " + scope.error);
  return TRITONBACKEND_ModelInstanceSetState(instance, new InstanceState{device});
}

__attribute__((visibility("default"))) TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance* instance) {
  return operon_backend::DeleteInstanceState<InstanceState>(instance);
}

__attribute__((visibility("default"))) TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  return operon_backend::RespondWithInstanceState<InstanceState>(instance, requests, count, Answer);
}

}  // extern "C"
