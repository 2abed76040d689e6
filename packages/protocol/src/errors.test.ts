import { describe, expect, it } from "vitest";
import { ERROR_KINDS, grpcStatusOf, httpStatusOf } from "./errors.js";

describe("error kind mapping", () => {
  it.each([
    ["INVALID_ARG", 400, 3],
    ["NOT_FOUND", 404, 5],
    ["UNAVAILABLE", 503, 14],
    ["INTERNAL", 500, 13],
    ["UNSUPPORTED", 501, 12],
    ["ALREADY_EXISTS", 400, 6],
    ["CANCELLED", 400, 1],
    ["UNKNOWN", 400, 2],
    ["UNAUTHENTICATED", 401, 16],
    ["PERMISSION_DENIED", 403, 7],
    ["RESOURCE_EXHAUSTED", 429, 8],
  ] as const)("maps %s to HTTP %i and gRPC %i", (kind, http, grpc) => {
    expect(httpStatusOf(kind)).toBe(http);
    expect(grpcStatusOf(kind)).toBe(grpc);
  });

  it("covers every kind in the table above", () => {
    expect(ERROR_KINDS).toHaveLength(11);
  });
});
