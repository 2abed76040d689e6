/**
 * The TypeScript model API's former home, kept so that model files
 * importing `@operon/worker/backends/typescript-model-api` keep working.
 * It lives in @operon/backend-api now (import it from there); these are the
 * same bindings, not copies, so `instanceof ModelError` holds either way.
 */
export {
  ModelError,
  tensor,
  typedTensor,
  type BackendApiVersion,
  type DataType,
  type ErrorKind,
  type ExecuteContext,
  type InferOptions,
  type InferResult,
  type InitializeArgs,
  type ModelInstance,
  type ModelLog,
  type ModelLogLevel,
  type ResponseSender,
  type TensorFactory,
  type TensorLike,
  type TypedRequest,
  type TypedResponse,
  type TypedTensor,
} from "@operon/backend-api/typescript-model-api";
