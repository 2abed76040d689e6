/*
 * Operon's declaration of the TRITONSERVER_* part of Triton's C API that
 * backends use, written for Operon's libtritonserver.so from Triton's
 * documented contract (names, signatures, enum values, ownership rules).
 * Include path and names match Triton's, so a backend builds against this
 * header or Triton's alike, and the ABI (enum values, signatures, opaque
 * handles) is the same. Server-side entry points that only an in-process
 * Triton client uses (TRITONSERVER_Server*, InferenceRequest*, ...) are not
 * part of Operon's library: see native/tritonserver/README.md for the list
 * of what is implemented.
 */
#ifndef TRITON_CORE_TRITONSERVER_H
#define TRITON_CORE_TRITONSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_MSC_VER)
#define TRITONSERVER_DECLSPEC __declspec(dllexport)
#elif defined(__GNUC__)
#define TRITONSERVER_DECLSPEC __attribute__((__visibility__("default")))
#else
#define TRITONSERVER_DECLSPEC
#endif

/* Opaque handles. Only pointers to them cross the API. */
struct TRITONSERVER_BufferAttributes;
struct TRITONSERVER_Error;
struct TRITONSERVER_InferenceRequest;
struct TRITONSERVER_InferenceResponse;
struct TRITONSERVER_InferenceTrace;
struct TRITONSERVER_Message;
struct TRITONSERVER_Metrics;
struct TRITONSERVER_Parameter;
struct TRITONSERVER_ResponseAllocator;
struct TRITONSERVER_Server;
struct TRITONSERVER_ServerOptions;
struct TRITONSERVER_Metric;
struct TRITONSERVER_MetricFamily;
struct TRITONSERVER_MetricArgs;
/* C spells the handles without `struct` too, as C++ does. */
typedef struct TRITONSERVER_BufferAttributes TRITONSERVER_BufferAttributes;
typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONSERVER_InferenceRequest TRITONSERVER_InferenceRequest;
typedef struct TRITONSERVER_InferenceResponse TRITONSERVER_InferenceResponse;
typedef struct TRITONSERVER_InferenceTrace TRITONSERVER_InferenceTrace;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;
typedef struct TRITONSERVER_Metrics TRITONSERVER_Metrics;
typedef struct TRITONSERVER_Parameter TRITONSERVER_Parameter;
typedef struct TRITONSERVER_ResponseAllocator TRITONSERVER_ResponseAllocator;
typedef struct TRITONSERVER_Server TRITONSERVER_Server;
typedef struct TRITONSERVER_ServerOptions TRITONSERVER_ServerOptions;
typedef struct TRITONSERVER_Metric TRITONSERVER_Metric;
typedef struct TRITONSERVER_MetricFamily TRITONSERVER_MetricFamily;
typedef struct TRITONSERVER_MetricArgs TRITONSERVER_MetricArgs;

/* Server API version this header describes (Triton 1.34). */
#define TRITONSERVER_API_VERSION_MAJOR 1
#define TRITONSERVER_API_VERSION_MINOR 34

TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_ApiVersion(
    uint32_t* major, uint32_t* minor);

/* Tensor element types. Values are part of the ABI. */
typedef enum TRITONSERVER_datatype_enum {
  TRITONSERVER_TYPE_INVALID = 0,
  TRITONSERVER_TYPE_BOOL = 1,
  TRITONSERVER_TYPE_UINT8 = 2,
  TRITONSERVER_TYPE_UINT16 = 3,
  TRITONSERVER_TYPE_UINT32 = 4,
  TRITONSERVER_TYPE_UINT64 = 5,
  TRITONSERVER_TYPE_INT8 = 6,
  TRITONSERVER_TYPE_INT16 = 7,
  TRITONSERVER_TYPE_INT32 = 8,
  TRITONSERVER_TYPE_INT64 = 9,
  TRITONSERVER_TYPE_FP16 = 10,
  TRITONSERVER_TYPE_FP32 = 11,
  TRITONSERVER_TYPE_FP64 = 12,
  TRITONSERVER_TYPE_BYTES = 13,
  TRITONSERVER_TYPE_BF16 = 14
} TRITONSERVER_DataType;

/* "FP32", "BYTES", ...; "<invalid>" for an unknown value. Static string. */
TRITONSERVER_DECLSPEC const char* TRITONSERVER_DataTypeString(
    TRITONSERVER_DataType datatype);
/* Inverse of DataTypeString; TRITONSERVER_TYPE_INVALID when unknown. */
TRITONSERVER_DECLSPEC TRITONSERVER_DataType
TRITONSERVER_StringToDataType(const char* dtype);
/* Bytes per element; 0 for BYTES (variable) and INVALID. */
TRITONSERVER_DECLSPEC uint32_t
TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType datatype);

typedef enum TRITONSERVER_memorytype_enum {
  TRITONSERVER_MEMORY_CPU = 0,
  TRITONSERVER_MEMORY_CPU_PINNED = 1,
  TRITONSERVER_MEMORY_GPU = 2
} TRITONSERVER_MemoryType;

TRITONSERVER_DECLSPEC const char* TRITONSERVER_MemoryTypeString(
    TRITONSERVER_MemoryType memtype);

typedef enum TRITONSERVER_parametertype_enum {
  TRITONSERVER_PARAMETER_STRING = 0,
  TRITONSERVER_PARAMETER_INT = 1,
  TRITONSERVER_PARAMETER_BOOL = 2,
  TRITONSERVER_PARAMETER_DOUBLE = 3,
  TRITONSERVER_PARAMETER_BYTES = 4
} TRITONSERVER_ParameterType;

TRITONSERVER_DECLSPEC const char* TRITONSERVER_ParameterTypeString(
    TRITONSERVER_ParameterType paramtype);

/* `value` points at a const char* string (STRING), int64_t (INT), bool
 * (BOOL) or double (DOUBLE); BYTES must use ParameterBytesNew. The parameter
 * copies the value. NULL on a bad type. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Parameter* TRITONSERVER_ParameterNew(
    const char* name, const TRITONSERVER_ParameterType type,
    const void* value);
/* A BYTES parameter; it does NOT copy the bytes (the caller keeps them alive). */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Parameter*
TRITONSERVER_ParameterBytesNew(
    const char* name, const void* byte_ptr, const uint64_t size);
TRITONSERVER_DECLSPEC void TRITONSERVER_ParameterDelete(
    struct TRITONSERVER_Parameter* parameter);

typedef enum TRITONSERVER_instancegroupkind_enum {
  TRITONSERVER_INSTANCEGROUPKIND_AUTO = 0,
  TRITONSERVER_INSTANCEGROUPKIND_CPU = 1,
  TRITONSERVER_INSTANCEGROUPKIND_GPU = 2,
  TRITONSERVER_INSTANCEGROUPKIND_MODEL = 3
} TRITONSERVER_InstanceGroupKind;

TRITONSERVER_DECLSPEC const char* TRITONSERVER_InstanceGroupKindString(
    TRITONSERVER_InstanceGroupKind kind);

typedef enum TRITONSERVER_loglevel_enum {
  TRITONSERVER_LOG_INFO = 0,
  TRITONSERVER_LOG_WARN = 1,
  TRITONSERVER_LOG_ERROR = 2,
  TRITONSERVER_LOG_VERBOSE = 3
} TRITONSERVER_LogLevel;

typedef enum TRITONSERVER_logformat_enum {
  TRITONSERVER_LOG_DEFAULT = 0,
  TRITONSERVER_LOG_ISO8601 = 1
} TRITONSERVER_LogFormat;

TRITONSERVER_DECLSPEC bool TRITONSERVER_LogIsEnabled(
    TRITONSERVER_LogLevel level);
/* Logs one record into the host's log. `filename` may be NULL. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_LogMessage(
    TRITONSERVER_LogLevel level, const char* filename, const int line,
    const char* msg);

typedef enum TRITONSERVER_errorcode_enum {
  TRITONSERVER_ERROR_UNKNOWN = 0,
  TRITONSERVER_ERROR_INTERNAL = 1,
  TRITONSERVER_ERROR_NOT_FOUND = 2,
  TRITONSERVER_ERROR_INVALID_ARG = 3,
  TRITONSERVER_ERROR_UNAVAILABLE = 4,
  TRITONSERVER_ERROR_UNSUPPORTED = 5,
  TRITONSERVER_ERROR_ALREADY_EXISTS = 6,
  TRITONSERVER_ERROR_CANCELLED = 7
} TRITONSERVER_Error_Code;

/* Errors: NULL means success. Whoever receives an error owns it and must
 * delete it (or hand it on to a function documented to take it). */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_ErrorNew(
    TRITONSERVER_Error_Code code, const char* msg);
TRITONSERVER_DECLSPEC void TRITONSERVER_ErrorDelete(
    struct TRITONSERVER_Error* error);
TRITONSERVER_DECLSPEC TRITONSERVER_Error_Code
TRITONSERVER_ErrorCode(struct TRITONSERVER_Error* error);
/* "Unknown", "Internal", "Not found", "Invalid argument", "Unavailable",
 * "Unsupported", "Already exists", "Cancelled". Static string. */
TRITONSERVER_DECLSPEC const char* TRITONSERVER_ErrorCodeString(
    struct TRITONSERVER_Error* error);
/* Valid while the error lives. */
TRITONSERVER_DECLSPEC const char* TRITONSERVER_ErrorMessage(
    struct TRITONSERVER_Error* error);

/* A JSON message (model config, backend config...). The message copies the
 * bytes; SerializeToJson's result lives as long as the message. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_MessageNewFromSerializedJson(
    struct TRITONSERVER_Message** message, const char* base, size_t byte_size);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MessageDelete(
    struct TRITONSERVER_Message* message);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_MessageSerializeToJson(
    struct TRITONSERVER_Message* message, const char** base,
    size_t* byte_size);

typedef enum tritonserver_metricformat_enum {
  TRITONSERVER_METRIC_PROMETHEUS = 0
} TRITONSERVER_MetricFormat;

TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricsDelete(
    struct TRITONSERVER_Metrics* metrics);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricsFormatted(
    struct TRITONSERVER_Metrics* metrics, TRITONSERVER_MetricFormat format,
    const char** base, size_t* byte_size);

/* Buffer attributes: memory type, id, byte size, CUDA IPC handle. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesNew(
    struct TRITONSERVER_BufferAttributes** buffer_attributes);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesDelete(
    struct TRITONSERVER_BufferAttributes* buffer_attributes);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesSetMemoryTypeId(
    struct TRITONSERVER_BufferAttributes* buffer_attributes,
    int64_t memory_type_id);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesSetMemoryType(
    struct TRITONSERVER_BufferAttributes* buffer_attributes,
    TRITONSERVER_MemoryType memory_type);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesSetCudaIpcHandle(
    struct TRITONSERVER_BufferAttributes* buffer_attributes,
    void* cuda_ipc_handle);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesSetByteSize(
    struct TRITONSERVER_BufferAttributes* buffer_attributes, size_t byte_size);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesMemoryTypeId(
    struct TRITONSERVER_BufferAttributes* buffer_attributes,
    int64_t* memory_type_id);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesMemoryType(
    struct TRITONSERVER_BufferAttributes* buffer_attributes,
    TRITONSERVER_MemoryType* memory_type);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesCudaIpcHandle(
    struct TRITONSERVER_BufferAttributes* buffer_attributes,
    void** cuda_ipc_handle);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_BufferAttributesByteSize(
    struct TRITONSERVER_BufferAttributes* buffer_attributes,
    size_t* byte_size);

/* Traces: Operon records none (TRITONBACKEND_RequestTrace answers NULL), so
 * this accepts and ignores a report; a NULL trace is fine. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_InferenceTraceReportActivity(
    struct TRITONSERVER_InferenceTrace* trace, uint64_t timestamp,
    const char* activity_name);

/* Request flags and response flags (part of the ABI). */
typedef enum tritonserver_requestflag_enum {
  TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1,
  TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
} TRITONSERVER_RequestFlag;

typedef enum tritonserver_requestreleaseflag_enum {
  TRITONSERVER_REQUEST_RELEASE_ALL = 1,
  TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2
} TRITONSERVER_RequestReleaseFlag;

typedef enum tritonserver_responsecompleteflag_enum {
  TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
} TRITONSERVER_ResponseCompleteFlag;

/* Custom metrics, exported on Operon's metrics port. */
typedef enum TRITONSERVER_metrickind_enum {
  TRITONSERVER_METRIC_KIND_COUNTER = 0,
  TRITONSERVER_METRIC_KIND_GAUGE = 1,
  TRITONSERVER_METRIC_KIND_HISTOGRAM = 2
} TRITONSERVER_MetricKind;

/* A family is a metric name + kind + help text; creating one whose name
 * exists with the same kind and description returns a new handle to it. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricFamilyNew(
    struct TRITONSERVER_MetricFamily** family,
    const TRITONSERVER_MetricKind kind, const char* name,
    const char* description);
/* Every metric of the family must have been deleted first. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_MetricFamilyDelete(struct TRITONSERVER_MetricFamily* family);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_GetMetricFamilyKind(
    struct TRITONSERVER_MetricFamily* family, TRITONSERVER_MetricKind* kind);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricArgsNew(
    struct TRITONSERVER_MetricArgs** args);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_MetricArgsSetHistogram(
    struct TRITONSERVER_MetricArgs* args, const double* buckets,
    const uint64_t buckets_count);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricArgsDelete(
    struct TRITONSERVER_MetricArgs* args);
/* One metric of a family with its labels (STRING parameters, copied). */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricNew(
    struct TRITONSERVER_Metric** metric,
    struct TRITONSERVER_MetricFamily* family,
    const struct TRITONSERVER_Parameter** labels, const uint64_t label_count);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error*
TRITONSERVER_MetricNewWithArgs(
    struct TRITONSERVER_Metric** metric,
    struct TRITONSERVER_MetricFamily* family,
    const struct TRITONSERVER_Parameter** labels, const uint64_t label_count,
    const struct TRITONSERVER_MetricArgs* args);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricDelete(
    struct TRITONSERVER_Metric* metric);
/* Counter and gauge value; a histogram answers UNSUPPORTED. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricValue(
    struct TRITONSERVER_Metric* metric, double* value);
/* Counters take only value >= 0. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricIncrement(
    struct TRITONSERVER_Metric* metric, double value);
/* Gauges only. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricSet(
    struct TRITONSERVER_Metric* metric, double value);
/* Histograms only. */
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_MetricObserve(
    struct TRITONSERVER_Metric* metric, double value);
TRITONSERVER_DECLSPEC struct TRITONSERVER_Error* TRITONSERVER_GetMetricKind(
    struct TRITONSERVER_Metric* metric, TRITONSERVER_MetricKind* kind);

#ifdef __cplusplus
}
#endif

#endif /* TRITON_CORE_TRITONSERVER_H */
