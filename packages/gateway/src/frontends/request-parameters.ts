import { OperonError } from "@operon/protocol/errors";
import type { Parameters } from "@operon/protocol/tensor";

/**
 * The request-parameter rules both frontends apply, so that a request HTTP
 * refuses is refused over gRPC too: the schedule_policy parameters
 * `priority` and `timeout` must be non-negative integers (Triton: "Unable to
 * parse 'priority'"), and keys starting with `triton_` are reserved
 * (extension_parameters.md) except those the frontend itself reads
 * (`allowed`, e.g. gRPC streaming's triton_enable_empty_final_response).
 */
export function checkReservedParameters(parameters: Parameters, allowed: readonly string[] = []): void {
  for (const key of ["priority", "timeout"]) {
    const value = parameters[key];
    if (value !== undefined && !(typeof value === "number" && Number.isSafeInteger(value) && value >= 0)) {
      // A gRPC int64/uint64 beyond 2^53 arrives as a bigint, which JSON.stringify cannot print (that was an INTERNAL error).
      const shown =
        typeof value === "bigint" ? `${value} (outside 0..${Number.MAX_SAFE_INTEGER})` : JSON.stringify(value);
      throw new OperonError("INVALID_ARG", `'parameters.${key}' must be a non-negative integer, got ${shown}`);
    }
  }
  const reserved = Object.keys(parameters).find((key) => key.startsWith("triton_") && !allowed.includes(key));
  if (reserved !== undefined) {
    throw new OperonError(
      "INVALID_ARG",
      `parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified; got '${reserved}'`,
    );
  }
}
