import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import { statusOf } from "../frontends/grpc/grpc-calls.js";
import { reportOf } from "../frontends/http/http-respond.js";

// A tenant over its share is refused with a retry hint (TenantShares): both transports carry it.
describe("retry hints of refused requests", () => {
  const refused = new OperonError("RESOURCE_EXHAUSTED", "tenant 't' is over its share", { retryAfterSecs: 7 });

  it("HTTP answers 429 with Retry-After in seconds (1 when the error names none)", () => {
    expect(reportOf(refused)).toMatchObject({ status: 429, headers: { "Retry-After": "7" } });
    expect(reportOf(new OperonError("RESOURCE_EXHAUSTED", "over quota"))).toMatchObject({
      status: 429,
      headers: { "Retry-After": "1" },
    });
    expect(reportOf(new OperonError("UNAVAILABLE", "busy", { retryAfterSecs: 2 }))).toMatchObject({
      status: 503,
      headers: { "Retry-After": "2" },
    });
  });

  it("gRPC answers RESOURCE_EXHAUSTED with retry-after metadata", () => {
    const status = statusOf(refused, "/inference.GRPCInferenceService/ModelInfer");
    expect(status.code).toBe(8);
    expect(status.metadata?.get("retry-after")).toEqual(["7"]);
    expect(statusOf(new OperonError("RESOURCE_EXHAUSTED", "over quota"), "/x").metadata).toBeUndefined();
  });
});
