import { describe, expect, it } from "vitest";
import { OperonError } from "@operon/protocol/errors";
import { instanceCountBody, instancesBody } from "./http-scheduler-request.js";
import { ModelParkedError } from "../../repository/parked-models.js";
import { reportOf } from "./http-respond.js";

describe("instanceCountBody", () => {
  it("takes an integer count from 1 to 1024", () => {
    expect(instanceCountBody({ count: 1 })).toBe(1);
    expect(instanceCountBody({ count: 1024 })).toBe(1024);
  });

  it.each([
    [null],
    [[]],
    ["3"],
    [{}],
    [{ count: 0 }],
    [{ count: 1.5 }],
    [{ count: "2" }],
    [{ count: 1025 }],
    [{ count: -1 }],
  ])("refuses %j with INVALID_ARG naming the field", (body) => {
    let thrown: unknown;
    try {
      instanceCountBody(body);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OperonError);
    expect((thrown as OperonError).kind).toBe("INVALID_ARG");
    expect((thrown as OperonError).message).toMatch(/count/);
  });
});

describe("instancesBody", () => {
  it("takes an optional kind to move the model to, Triton's KIND_CPU or KIND_GPU", () => {
    expect(instancesBody({ count: 2 })).toEqual({ count: 2 });
    expect(instancesBody({ count: 2, kind: "KIND_GPU" })).toEqual({ count: 2, kind: "KIND_GPU" });
    expect(instancesBody({ count: 1, kind: "KIND_CPU" })).toEqual({ count: 1, kind: "KIND_CPU" });
  });

  it.each([["GPU"], ["KIND_MODEL"], [null], [3]])("refuses kind %j with INVALID_ARG naming the kinds", (kind) => {
    expect(() => instancesBody({ count: 1, kind })).toThrow(
      `'kind' must be "KIND_CPU" or "KIND_GPU" (the kinds a model moves between), got ${JSON.stringify(kind)}`,
    );
  });
});

describe("a parked model's answer", () => {
  it("is 503 with its Retry-After; other unavailable errors carry none", () => {
    expect(reportOf(new ModelParkedError("m", 5, Promise.resolve()))).toMatchObject({
      status: 503,
      headers: { "Retry-After": "5" },
    });
    expect(reportOf(new OperonError("UNAVAILABLE", "busy")).headers).toEqual({});
  });
});
