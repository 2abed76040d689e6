// Operon's own backends (native/backends/*): the model's config as JSON text
// (and parsed), the way every one of them starts ModelInitialize, and the
// refusal of a KIND_GPU instance by those that run on the CPU only. Private to
// this repository, like json-value.h beside it; a backend written for Triton
// needs neither. Their Execute's per-request loop: backend-execute.h.
#pragma once

#include <string>

#include "json-value.h"
#include "triton/core/tritonbackend.h"

namespace operon_backend {

/** The config of `model` (TRITONBACKEND_ModelConfig, version 1) serialized to JSON into *text; the error of the failing call otherwise. */
inline TRITONSERVER_Error* ModelConfigJson(TRITONBACKEND_Model* model, std::string* text) {
  TRITONSERVER_Message* message;
  TRITONSERVER_Error* err = TRITONBACKEND_ModelConfig(model, 1, &message);
  if (err != nullptr) return err;
  const char* json;
  size_t size;
  err = TRITONSERVER_MessageSerializeToJson(message, &json, &size);
  if (err == nullptr) text->assign(json, size);
  TRITONSERVER_MessageDelete(message);
  return err;
}

/** The config of `model`, parsed into *config; INVALID_ARG "<backend>: bad model config: <why>" when it is not JSON. */
inline TRITONSERVER_Error* ParsedModelConfig(TRITONBACKEND_Model* model, const char* backend, operon_json::Value* config) {
  std::string text;
  TRITONSERVER_Error* err = ModelConfigJson(model, &text);
  if (err != nullptr) return err;
  std::string why;
  if (!operon_json::Parse(text, config, &why))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, (std::string(backend) + ": bad model config: " + why).c_str());
  return nullptr;
}

/**
 * A CPU-only backend's answer to a KIND_GPU instance (from its ModelInstanceInitialize): INVALID_ARG naming the
 * backend, the instance and KIND_CPU, so the instance is never run on the CPU while placed on a GPU. In
 * Triton's API the instance's kind reaches the backend, and the backend decides; this is how Operon's decide.
 */
inline TRITONSERVER_Error* RefuseGpuInstance(TRITONBACKEND_ModelInstance* instance, const char* backend) {
  TRITONSERVER_InstanceGroupKind kind;
  TRITONSERVER_Error* err = TRITONBACKEND_ModelInstanceKind(instance, &kind);
  if (err != nullptr || kind != TRITONSERVER_INSTANCEGROUPKIND_GPU) return err;
  const char* name = "";
  err = TRITONBACKEND_ModelInstanceName(instance, &name);
  if (err != nullptr) return err;
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                               (std::string(backend) + ": instance '" + name +
                                "' is KIND_GPU, but this backend runs on the CPU only: use instance_group { kind: KIND_CPU }")
                                   .c_str());
}

}  // namespace operon_backend
