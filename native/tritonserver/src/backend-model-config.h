// Operon's own backends (native/backends/*): the model's config as JSON text, the
// way every one of them starts ModelInitialize. Private to this repository, like
// json-value.h beside it; a backend written for Triton needs neither.
#pragma once

#include <string>

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

}  // namespace operon_backend
