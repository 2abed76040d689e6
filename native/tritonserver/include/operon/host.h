/*
 * Operon's embedding API for libtritonserver.so.
 *
 * This header is for Operon's own host code (the worker's N-API addon and the
 * C++ test host), NOT for backend authors: backends see only Triton's API in
 * <triton/core/tritonbackend.h> / <triton/core/tritonserver.h>.
 *
 * Contract, in short:
 *  - Plain C, every function exported with the OperonHost prefix.
 *  - Every function is thread safe and may be called from any thread.
 *  - A function that can fail returns an OperonHostError* (NULL = success);
 *    the caller owns it and frees it with OperonHostErrorDelete.
 *  - Strings and arrays passed IN are copied by the library before the call
 *    returns, except tensor memory (OperonHostBuffer.base), which must stay
 *    valid until the library reports the request released (see `released`).
 *  - Strings returned OUT with a `char**` are malloc'd by the library; free
 *    them with OperonHostFree.
 *  - Callbacks (OperonHostCallbacks) may be called from ANY thread, also after
 *    OperonHostExecute returned (decoupled models, backends with their own
 *    threads). They must not block for long and must not call
 *    OperonHostInstanceDestroy on their own instance.
 *
 * Numeric codes are Triton's: error codes are TRITONSERVER_Error_Code values,
 * memory types TRITONSERVER_MemoryType, flags TRITONSERVER_RequestFlag /
 * TRITONSERVER_RequestReleaseFlag / TRITONSERVER_ResponseCompleteFlag,
 * parameter types TRITONSERVER_ParameterType, log levels TRITONSERVER_LogLevel.
 * They are repeated here as plain numbers so that a host needs only this file.
 *
 * Build outputs (native/scripts/build-tritonserver.mjs, run by npm install):
 *   native/build/tritonserver/lib/libtritonserver.so     this library
 *   native/build/tritonserver/backends/<name>/libtriton_<name>.so
 *       Operon's backends (operon_identity, operon_image_preprocess, and the
 *       refusal-test ones), in Triton's --backend-directory layout
 *   native/build/tritonserver/bin/operon-backend-host     the C++ test host
 *   native/build/tritonserver/UNAVAILABLE   present only when the build could
 *       not run (no compiler...): one line, the reason.
 * Link a host with -L.../lib -ltritonserver (rpath to .../lib), or dlopen the
 * library RTLD_GLOBAL before loading backends.
 */
#ifndef OPERON_HOST_H
#define OPERON_HOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define OPERON_HOST_EXPORT __declspec(dllexport)
#else
#define OPERON_HOST_EXPORT __attribute__((visibility("default")))
#endif

/* Version of THIS embedding API (not Triton's). Bumped on any change a host
 * must know about; OperonHostApiVersion() returns the library's. */
#define OPERON_HOST_API_VERSION 1

/* ---- Constants (values equal Triton's enums) ------------------------------ */

/* TRITONSERVER_Error_Code */
#define OPERON_HOST_ERROR_UNKNOWN 0
#define OPERON_HOST_ERROR_INTERNAL 1
#define OPERON_HOST_ERROR_NOT_FOUND 2
#define OPERON_HOST_ERROR_INVALID_ARG 3
#define OPERON_HOST_ERROR_UNAVAILABLE 4
#define OPERON_HOST_ERROR_UNSUPPORTED 5
#define OPERON_HOST_ERROR_ALREADY_EXISTS 6
#define OPERON_HOST_ERROR_CANCELLED 7

/* TRITONSERVER_MemoryType */
#define OPERON_HOST_MEMORY_CPU 0
#define OPERON_HOST_MEMORY_CPU_PINNED 1
#define OPERON_HOST_MEMORY_GPU 2

/* TRITONSERVER_InstanceGroupKind (instance kind) */
#define OPERON_HOST_KIND_AUTO 0
#define OPERON_HOST_KIND_CPU 1
#define OPERON_HOST_KIND_GPU 2
#define OPERON_HOST_KIND_MODEL 3

/* TRITONSERVER_RequestFlag */
#define OPERON_HOST_REQUEST_FLAG_SEQUENCE_START 1
#define OPERON_HOST_REQUEST_FLAG_SEQUENCE_END 2

/* TRITONSERVER_RequestReleaseFlag */
#define OPERON_HOST_RELEASE_ALL 1
#define OPERON_HOST_RELEASE_RESCHEDULE 2

/* TRITONSERVER_ResponseCompleteFlag */
#define OPERON_HOST_RESPONSE_FINAL 1

/* TRITONSERVER_ParameterType */
#define OPERON_HOST_PARAMETER_STRING 0
#define OPERON_HOST_PARAMETER_INT 1
#define OPERON_HOST_PARAMETER_BOOL 2
#define OPERON_HOST_PARAMETER_DOUBLE 3
#define OPERON_HOST_PARAMETER_BYTES 4

/* TRITONSERVER_LogLevel */
#define OPERON_HOST_LOG_INFO 0
#define OPERON_HOST_LOG_WARN 1
#define OPERON_HOST_LOG_ERROR 2
#define OPERON_HOST_LOG_VERBOSE 3

/* TRITONBACKEND_ExecutionPolicy */
#define OPERON_HOST_EXECUTION_BLOCKING 0
#define OPERON_HOST_EXECUTION_DEVICE_BLOCKING 1

/* ---- Errors ----------------------------------------------------------------- */

typedef struct OperonHostError {
  uint32_t code;   /* a TRITONSERVER_Error_Code value */
  char* message;   /* NUL-terminated, owned by the error */
} OperonHostError;

/* Frees an error returned by any OperonHost* function (NULL is fine). */
OPERON_HOST_EXPORT void OperonHostErrorDelete(OperonHostError* error);
/* Frees a string returned through a char** out-parameter (NULL is fine). */
OPERON_HOST_EXPORT void OperonHostFree(void* pointer);

/* Version of this embedding API built into the library. */
OPERON_HOST_EXPORT uint32_t OperonHostApiVersion(void);
/* The TRITONBACKEND / TRITONSERVER API versions the library implements. */
OPERON_HOST_EXPORT void OperonHostTritonApiVersion(
    uint32_t* backend_major, uint32_t* backend_minor, uint32_t* server_major,
    uint32_t* server_minor);

/* ---- Logging (process-wide) --------------------------------------------------- */

/* Receives every TRITONSERVER_LogMessage / LOG_* of every backend. `file` may
 * be NULL. Called from any thread. */
typedef void (*OperonHostLogFn)(
    void* user, uint32_t level, const char* file, int line,
    const char* message);

/* Sets the log sink (NULL restores the default: stderr). `verbose_level` is
 * what TRITONSERVER_LogIsEnabled(VERBOSE) answers true for (> 0 = enabled);
 * INFO, WARN and ERROR are always enabled. */
OPERON_HOST_EXPORT void OperonHostSetLogCallback(
    OperonHostLogFn fn, void* user, uint32_t verbose_level);

/* ---- Handles ------------------------------------------------------------------- */

typedef struct OperonHostBackend OperonHostBackend;
typedef struct OperonHostModel OperonHostModel;
typedef struct OperonHostInstance OperonHostInstance;

/* ---- Backends ------------------------------------------------------------------ */

/* Loads (or references again) the backend `name` from `library_path`
 * (dlopen RTLD_NOW | RTLD_LOCAL). The first load of a name in the process
 * resolves TRITONBACKEND_Initialize/Finalize, TRITONBACKEND_ModelInitialize/
 * Finalize, TRITONBACKEND_ModelInstanceInitialize/Finalize and
 * TRITONBACKEND_ModelInstanceExecute (only the last is required, as in Triton)
 * and calls TRITONBACKEND_Initialize once. A later load of the same name
 * returns the same backend with its reference count raised (library_path and
 * config must then match; a different path is ALREADY_EXISTS).
 * `backend_config_json` is a JSON object of strings, {"key":"value"}, from
 * --backend-config; NULL or "" means {}. Each successful load must be paired
 * with OperonHostBackendUnload; the last one calls TRITONBACKEND_Finalize and
 * dlcloses the library (models hold their own reference).
 * Errors: NOT_FOUND (file), INVALID_ARG (dlopen failed, bad config JSON),
 * NOT_FOUND naming the symbol (TRITONBACKEND_ModelInstanceExecute missing),
 * or the backend's own TRITONBACKEND_Initialize error, prefixed with the
 * backend name and the API version Operon implements. */
OPERON_HOST_EXPORT OperonHostError* OperonHostBackendLoad(
    const char* name, const char* library_path,
    const char* backend_config_json, OperonHostBackend** backend);
OPERON_HOST_EXPORT void OperonHostBackendUnload(OperonHostBackend* backend);
/* The execution policy the backend set in Initialize (OPERON_HOST_EXECUTION_*). */
OPERON_HOST_EXPORT uint32_t OperonHostBackendExecutionPolicy(
    OperonHostBackend* backend);

/* ---- Models -------------------------------------------------------------------- */

/* Creates a model on `backend` and calls TRITONBACKEND_ModelInitialize.
 * `repository_path` is the model's folder (what TRITONBACKEND_ModelRepository
 * reports, artifact type FILESYSTEM); `config_json` is the model config in
 * Triton's JSON form (protobuf JSON mapping of config.pbtxt); the library
 * fills in the defaults Triton's normalized config always has (name,
 * max_batch_size 0, empty batch_input/batch_output/parameters, each input's
 * optional/is_shape_tensor/allow_ragged_batch/format, ...) and leaves every
 * field present alone;
 * `auto_complete` is what TRITONBACKEND_ModelAutoCompleteConfig answers.
 * Errors: INVALID_ARG (bad JSON), or the backend's own ModelInitialize error
 * (its code and message unchanged). */
OPERON_HOST_EXPORT OperonHostError* OperonHostModelCreate(
    OperonHostBackend* backend, const char* model_name, int64_t version,
    const char* repository_path, const char* config_json, int auto_complete,
    OperonHostModel** model);
/* The model's config JSON as it is now (after any TRITONBACKEND_ModelSetConfig
 * by the backend's auto-complete). Free *config_json with OperonHostFree. */
OPERON_HOST_EXPORT OperonHostError* OperonHostModelConfig(
    OperonHostModel* model, char** config_json);
/* Calls TRITONBACKEND_ModelFinalize. Every instance of the model must have
 * been destroyed first. */
OPERON_HOST_EXPORT OperonHostError* OperonHostModelDestroy(
    OperonHostModel* model);

/* ---- Instances and their callbacks ------------------------------------------------- */

/* One buffer of contiguous memory. For inputs: memory the library hands to
 * TRITONBACKEND_InputBuffer unchanged (no copy): host memory (CPU or
 * CPU_PINNED), or device memory (GPU, `memory_type_id` = the CUDA ordinal),
 * which must lie inside one region of that GPU's pool
 * (OperonHostDeviceAllocate) and may only go to a KIND_GPU instance on the
 * same GPU; anything else is refused before the backend sees the batch. */
typedef struct OperonHostBuffer {
  const void* base;
  uint64_t byte_size;
  uint32_t memory_type;    /* OPERON_HOST_MEMORY_CPU, _CPU_PINNED or _GPU */
  int64_t memory_type_id;
} OperonHostBuffer;

typedef struct OperonHostParameter {
  const char* name;
  uint32_t type;           /* OPERON_HOST_PARAMETER_* */
  const char* string_value;  /* STRING */
  int64_t int_value;         /* INT */
  int32_t bool_value;        /* BOOL: 0 or 1 */
  double double_value;       /* DOUBLE */
  const void* bytes;         /* BYTES (copied) */
  uint64_t byte_size;        /* BYTES */
} OperonHostParameter;

typedef struct OperonHostInput {
  const char* name;
  const char* datatype;    /* Triton datatype string: "FP32", "BYTES", ... */
  const int64_t* shape;    /* full shape, batch dimension included */
  uint32_t dims_count;
  const OperonHostBuffer* buffers;  /* in order; BYTES: 4-byte length prefixed elements */
  uint32_t buffer_count;
} OperonHostInput;

typedef struct OperonHostRequest {
  void* user;              /* host's token for this request, given back in callbacks */
  const char* id;          /* request id; NULL = "" */
  uint64_t correlation_id;             /* used when correlation_id_string is NULL */
  const char* correlation_id_string;   /* non-NULL: the correlation id is a string */
  uint32_t flags;          /* OPERON_HOST_REQUEST_FLAG_* */
  const OperonHostInput* inputs;
  uint32_t input_count;
  const char* const* requested_outputs;  /* names; count 0 = every output of the config */
  uint32_t requested_output_count;
  const OperonHostParameter* parameters;
  uint32_t parameter_count;
} OperonHostRequest;

/* One output of a response. The memory was given by the host's `allocate`
 * callback (see below); `allocation` is the host's token from it. */
typedef struct OperonHostOutput {
  const char* name;
  const char* datatype;
  const int64_t* shape;
  uint32_t dims_count;
  void* base;
  uint64_t byte_size;
  uint32_t memory_type;
  int64_t memory_type_id;
  void* allocation;
} OperonHostOutput;

typedef struct OperonHostResponse {
  const OperonHostOutput* outputs;   /* valid during the callback only (the memory itself belongs to the host) */
  uint32_t output_count;
  const OperonHostParameter* parameters;
  uint32_t parameter_count;
  const OperonHostError* error;      /* non-NULL: the response is an error (outputs are still listed so the host can free them) */
  uint32_t flags;                    /* OPERON_HOST_RESPONSE_FINAL when it is the last one */
  int32_t empty;                     /* 1: flags only (TRITONBACKEND_ResponseFactorySendFlags), no response */
} OperonHostResponse;

/* Statistics the backend reported (TRITONBACKEND_ModelInstanceReport*). */
#define OPERON_HOST_STATS_REQUEST 0   /* ModelInstanceReportStatistics: one request */
#define OPERON_HOST_STATS_BATCH 1     /* ModelInstanceReportBatchStatistics: one execution */
#define OPERON_HOST_STATS_RESPONSE 2  /* ModelInstanceReportResponseStatistics */
typedef struct OperonHostStatistics {
  uint32_t kind;                  /* OPERON_HOST_STATS_* */
  void* request_user;             /* REQUEST and RESPONSE: the request's token; BATCH: NULL */
  int32_t success;                /* REQUEST / RESPONSE: 1 = success */
  uint64_t batch_size;            /* BATCH */
  uint64_t exec_start_ns;         /* REQUEST / BATCH */
  uint64_t compute_start_ns;      /* all kinds (RESPONSE: response compute start) */
  uint64_t compute_end_ns;        /* REQUEST / BATCH; RESPONSE: compute output start */
  uint64_t exec_end_ns;           /* REQUEST / BATCH; RESPONSE: response end */
} OperonHostStatistics;

typedef struct OperonHostCallbacks {
  void* user;  /* given to every callback as its first argument */

  /* Gives the memory a response output is written into. The library asks
   * with the backend's preferred memory type and id (GPU and the CUDA
   * ordinal when the backend asks for device memory); the host answers with
   * what it gives: CPU or CPU_PINNED host memory, or GPU memory of the pool
   * (OperonHostDeviceAllocate, on the GPU the backend asked for: the library
   * refuses another), which the host then owns and frees with
   * OperonHostDeviceFree. Triton's contract lets a backend get another
   * memory type than it preferred; it must copy accordingly.
   * `*allocation` is an opaque token the host gets back with the output.
   * Return NULL on success or an error (made with OperonHostErrorNew), which
   * the backend receives from TRITONBACKEND_OutputBuffer.
   * NULL callback: the library allocates host memory itself, valid only
   * during the `response` callback that carries it. */
  OperonHostError* (*allocate)(
      void* user, void* request_user, const char* output_name,
      const char* datatype, const int64_t* shape, uint32_t dims_count,
      uint64_t byte_size, uint32_t preferred_memory_type,
      int64_t preferred_memory_type_id, void** base, uint32_t* memory_type,
      int64_t* memory_type_id, void** allocation);

  /* A response memory the host allocated will not be delivered (the backend
   * deleted the response without sending it). NULL: nothing to do. */
  void (*release_allocation)(
      void* user, void* request_user, void* base, void* allocation);

  /* One response was sent (TRITONBACKEND_ResponseSend or
   * ResponseFactorySendFlags). From the call on, the host owns the memory of
   * every output listed. Requests' tokens stay meaningful until the host has
   * seen both `released` and a response with OPERON_HOST_RESPONSE_FINAL. */
  void (*response)(
      void* user, void* request_user, const OperonHostResponse* response);

  /* TRITONBACKEND_RequestRelease(request, flags): the backend is done with
   * the request and its input memory. */
  void (*released)(void* user, void* request_user, uint32_t release_flags);

  /* Answers TRITONBACKEND_RequestIsCancelled / ResponseFactoryIsCancelled:
   * non-zero when the client cancelled. NULL: never cancelled. */
  int32_t (*is_cancelled)(void* user, void* request_user);

  /* Statistics the backend reported. NULL: ignored (the pull API below still
   * counts them). */
  void (*statistics)(void* user, const OperonHostStatistics* statistics);
} OperonHostCallbacks;

/* Makes an error for a callback to return (the library frees it). */
OPERON_HOST_EXPORT OperonHostError* OperonHostErrorNew(
    uint32_t code, const char* message);

/* Creates an instance (TRITONBACKEND_ModelInstanceInitialize). `kind` is
 * OPERON_HOST_KIND_*; a GPU instance's `device_id` (>= 0) reaches the backend
 * (TRITONBACKEND_ModelInstanceDeviceId), which decides whether it can run it.
 * `callbacks` is copied. */
OPERON_HOST_EXPORT OperonHostError* OperonHostInstanceCreate(
    OperonHostModel* model, const char* instance_name, uint32_t kind,
    int32_t device_id, const OperonHostCallbacks* callbacks,
    OperonHostInstance** instance);
/* Calls TRITONBACKEND_ModelInstanceFinalize. No Execute may be running on it,
 * and every request executed on it should have been released and have had
 * its FINAL response: responses and response factories refer to their
 * instance's callbacks (a well-behaved backend, e.g. operon_identity, waits
 * in its finalize for the threads that still send). */
OPERON_HOST_EXPORT OperonHostError* OperonHostInstanceDestroy(
    OperonHostInstance* instance);

/* Runs one batch: builds `count` TRITONBACKEND_Request from `requests` and
 * calls TRITONBACKEND_ModelInstanceExecute once with all of them, on the
 * calling thread. Returns when Execute returns; responses may come before
 * and after that through the instance's callbacks.
 * If Execute itself fails, the backend did not take the requests (Triton's
 * rule): the library then answers every request with that error as a final
 * response and releases them, and also returns a copy of the error. */
OPERON_HOST_EXPORT OperonHostError* OperonHostExecute(
    OperonHostInstance* instance, const OperonHostRequest* requests,
    uint32_t count);

/* ---- Device memory (outputs kept on a GPU between the steps of an operator) ----
 *
 * A per-GPU pool in this process, allocated through the CUDA driver loaded at
 * run time (dlopen of libcuda.so.1, or of OPERON_CUDA_DRIVER_LIB), so the
 * library has no CUDA link. Freed regions are cached for reuse; an
 * allocation the driver refuses for lack of memory gives the cache back and
 * tries again. Errors: UNAVAILABLE when the driver cannot be loaded or the
 * GPU is out of memory (the message says which), INVALID_ARG for a device
 * ordinal out of range or memory that is not the pool's. */
OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceAllocate(
    int32_t device, uint64_t byte_size, void** base);
/* Gives a region back to its GPU's pool (`base` as Allocate returned it). */
OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceFree(
    int32_t device, void* base);
/* Synchronous copies between host memory and a region of the pool (the
 * device side must lie inside one live region). */
OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceCopyToHost(
    int32_t device, void* dst, const void* src, uint64_t byte_size);
OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceCopyFromHost(
    int32_t device, void* dst, const void* src, uint64_t byte_size);

typedef struct OperonHostDevicePoolStatistics {
  uint64_t live_regions;    /* allocated and not freed */
  uint64_t live_bytes;      /* their size classes' bytes */
  uint64_t cached_regions;  /* freed, kept for reuse */
  uint64_t cached_bytes;
  uint64_t imported_regions;  /* other processes' regions opened here (OperonHostDeviceImport) */
} OperonHostDevicePoolStatistics;
/* All zero for a GPU the pool never used. */
OPERON_HOST_EXPORT void OperonHostDevicePoolGetStatistics(
    int32_t device, OperonHostDevicePoolStatistics* statistics);
/* Frees the cached regions of GPU `device` back to the driver. A region
 * another process has imported must not be trimmed while it reads it. */
OPERON_HOST_EXPORT OperonHostError* OperonHostDevicePoolTrim(int32_t device);

/* Between processes: CUDA IPC. Export gives the handle of the pool region
 * holding `base` (cuIpcGetMemHandle) and the offset of `base` in it; Import,
 * in another process, opens that region once (cuIpcOpenMemHandle; later
 * imports of a handle of the same region reuse the mapping, since the
 * producer's pool reuses its regions) and answers the address at the offset,
 * which then passes the GPU-input checks as a pool region does. CUDA refuses
 * to open a handle in the process that exported it. ImportsClose closes every
 * region opened on GPU `device` (when the producing process went away). */
typedef struct OperonHostDeviceIpcHandle {
  uint8_t handle[64];  /* CUipcMemHandle of the region */
  uint64_t offset;     /* of the exported address in the region */
} OperonHostDeviceIpcHandle;
OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceExport(
    int32_t device, const void* base, OperonHostDeviceIpcHandle* handle);
OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceImport(
    int32_t device, const OperonHostDeviceIpcHandle* handle, void** base);
OPERON_HOST_EXPORT OperonHostError* OperonHostDeviceImportsClose(int32_t device);

/* ---- Pull statistics ------------------------------------------------------------- */

/* Cumulative counts of what the model's instances reported. */
typedef struct OperonHostModelStatistics {
  uint64_t success_count;        /* REQUEST stats with success */
  uint64_t failure_count;        /* REQUEST stats without */
  uint64_t execution_count;      /* BATCH stats */
  uint64_t inference_count;      /* sum of BATCH batch_size */
  uint64_t compute_infer_ns;     /* sum over BATCH of compute_end - compute_start */
  uint64_t response_count;       /* responses sent */
} OperonHostModelStatistics;

OPERON_HOST_EXPORT void OperonHostModelGetStatistics(
    OperonHostModel* model, OperonHostModelStatistics* statistics);

/* ---- Custom metrics (TRITONSERVER_Metric*) ----------------------------------------- */

/* Every custom metric family backends created, in Prometheus text exposition
 * format (# HELP, # TYPE, one line per metric with its labels). Empty string
 * when there are none. Free *text with OperonHostFree. */
OPERON_HOST_EXPORT OperonHostError* OperonHostMetricsText(char** text);

#ifdef __cplusplus
}
#endif

#endif /* OPERON_HOST_H */
