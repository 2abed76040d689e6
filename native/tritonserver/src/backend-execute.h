// Operon's own backends (native/backends/*): their error return, the model and
// instance state each of them keeps (set in ModelInitialize or
// ModelInstanceInitialize, read in Execute, deleted in the Finalize), and the
// per-request loop of a backend that answers each request with one final
// response. Private to this repository, like backend-model-config.h beside it.
#pragma once

#include <cstdint>

#include "triton/core/tritonbackend.h"

// Returns the error of `expr` from the calling function, if any.
#ifndef RETURN_IF_ERROR
#define RETURN_IF_ERROR(expr)           \
  do {                                  \
    TRITONSERVER_Error* err__ = (expr); \
    if (err__ != nullptr) return err__; \
  } while (false)
#endif

namespace operon_backend {

namespace detail {
// A state pointer the host keeps for the backend (TRITONBACKEND_ModelState, TRITONBACKEND_ModelInstanceState).
template <typename State, typename Owner>
TRITONSERVER_Error* StateOf(TRITONSERVER_Error* (*get)(Owner*, void**), Owner* owner, State** state) {
  void* p = nullptr;
  RETURN_IF_ERROR(get(owner, &p));
  *state = static_cast<State*>(p);
  return nullptr;
}

// Deletes the State behind such a pointer.
template <typename State, typename Owner>
TRITONSERVER_Error* DeleteState(TRITONSERVER_Error* (*get)(Owner*, void**), Owner* owner) {
  State* state = nullptr;
  RETURN_IF_ERROR(StateOf(get, owner, &state));
  delete state;
  return nullptr;
}
}  // namespace detail

/** The model state of `model` (set by TRITONBACKEND_ModelSetState in ModelInitialize) as a State*. */
template <typename State>
TRITONSERVER_Error* ModelStateOf(TRITONBACKEND_Model* model, State** state) {
  return detail::StateOf(TRITONBACKEND_ModelState, model, state);
}

/** The model state of the model `instance` belongs to, as a State*. */
template <typename State>
TRITONSERVER_Error* ModelStateOf(TRITONBACKEND_ModelInstance* instance, State** state) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  return ModelStateOf(model, state);
}

/** The instance state of `instance` (set by TRITONBACKEND_ModelInstanceSetState) as a State*. */
template <typename State>
TRITONSERVER_Error* InstanceStateOf(TRITONBACKEND_ModelInstance* instance, State** state) {
  return detail::StateOf(TRITONBACKEND_ModelInstanceState, instance, state);
}

/** ModelFinalize's part: deletes the State that ModelInitialize set on `model`. */
template <typename State>
TRITONSERVER_Error* DeleteModelState(TRITONBACKEND_Model* model) {
  return detail::DeleteState<State>(TRITONBACKEND_ModelState, model);
}

/** ModelInstanceFinalize's part: deletes the State that ModelInstanceInitialize set on `instance`. */
template <typename State>
TRITONSERVER_Error* DeleteInstanceState(TRITONBACKEND_ModelInstance* instance) {
  return detail::DeleteState<State>(TRITONBACKEND_ModelInstanceState, instance);
}

/**
 * Execute's loop for a backend that answers each request on its own with one final response: a response per
 * request, filled by `answer(request, response)`, sent with the error `answer` returned (one bad request fails only
 * itself), and the request released. The host owns an error handed to TRITONBACKEND_ResponseSend (Operon's
 * libtritonserver.so deletes it), so it is not deleted here; an error of the host's own calls is dropped, as there
 * is no one left to tell.
 */
template <typename Answer>
void RespondToEach(TRITONBACKEND_Request** requests, uint32_t count, Answer&& answer) {
  for (uint32_t i = 0; i < count; ++i) {
    TRITONBACKEND_Response* response = nullptr;
    TRITONSERVER_Error* err = TRITONBACKEND_ResponseNew(&response, requests[i]);
    if (err == nullptr) {
      TRITONSERVER_Error* result = answer(requests[i], response);
      err = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, result);
    }
    if (err != nullptr) TRITONSERVER_ErrorDelete(err);
    err = TRITONBACKEND_RequestRelease(requests[i], TRITONSERVER_REQUEST_RELEASE_ALL);
    if (err != nullptr) TRITONSERVER_ErrorDelete(err);
  }
}

namespace detail {
// RespondToEach with answer(const State&, request, response), the state found by lookup(&state).
template <typename State, typename Lookup, typename Answer>
TRITONSERVER_Error* RespondWith(Lookup lookup, TRITONBACKEND_Request** requests, uint32_t count, Answer& answer) {
  const State* state = nullptr;
  RETURN_IF_ERROR(lookup(&state));
  RespondToEach(requests, count, [&](TRITONBACKEND_Request* request, TRITONBACKEND_Response* response) {
    return answer(*state, request, response);
  });
  return nullptr;
}
}  // namespace detail

/**
 * The whole Execute of a backend whose answer needs its model's state only: RespondToEach with
 * `answer(const State&, request, response)`; the state's lookup error (no request answered) otherwise.
 */
template <typename State, typename Answer>
TRITONSERVER_Error* RespondWithModelState(TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
                                          uint32_t count, Answer&& answer) {
  auto lookup = [instance](const State** state) { return ModelStateOf(instance, state); };
  return detail::RespondWith<State>(lookup, requests, count, answer);
}

/** As RespondWithModelState, with the instance's own state (set in ModelInstanceInitialize). */
template <typename State, typename Answer>
TRITONSERVER_Error* RespondWithInstanceState(TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
                                             uint32_t count, Answer&& answer) {
  auto lookup = [instance](const State** state) { return InstanceStateOf(instance, state); };
  return detail::RespondWith<State>(lookup, requests, count, answer);
}

}  // namespace operon_backend
