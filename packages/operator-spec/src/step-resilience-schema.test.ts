import { describe, expect, it } from "vitest";
import { parseOperatorSpec } from "./parse-operator-spec.js";

/** The retry, circuitBreaker and fallback fields of a model step: kept when valid, refused with a message naming the field. */
describe("model step resilience fields", () => {
  const spec = (extra: Record<string, unknown>) => ({
    name: "op",
    inputs: [{ name: "IN", datatype: "FP32", dims: [1] }],
    outputs: [{ name: "OUT", datatype: "FP32", dims: [1] }],
    steps: [{ id: "a", kind: "model", model: "m", inputs: { x: "IN" }, outputs: { y: "OUT" }, ...extra }],
  });

  it("keeps valid fields as written", () => {
    const parsed = parseOperatorSpec(
      spec({
        retry: { maxAttempts: 4, initialBackoffMs: 10 },
        circuitBreaker: { failureThreshold: 3, windowMs: 1000, openMs: 500 },
        fallback: { outputs: { y: { datatype: "FP32", shape: [1], data: [0] } } },
      }),
    );
    expect(parsed.steps[0]).toMatchObject({
      retry: { maxAttempts: 4, initialBackoffMs: 10 },
      circuitBreaker: { failureThreshold: 3, windowMs: 1000, openMs: 500 },
      fallback: { outputs: { y: { datatype: "FP32", shape: [1], data: [0] } } },
    });
    expect(parseOperatorSpec(spec({ fallback: { model: "backup" } })).steps[0]).toMatchObject({
      fallback: { model: "backup" },
    });
  });

  it.each([
    [{ retry: { maxAttempts: 0 } }, /step 'a': retry: maxAttempts must be an integer >= 1 and <= 10/],
    [{ retry: { maxAttempts: 2.5 } }, /retry: maxAttempts must be an integer/],
    [{ retry: { attempts: 3 } }, /retry: unknown field\(s\) 'attempts'; retry takes maxAttempts/],
    [{ retry: 3 }, /step 'a': retry must be an object/],
    [{ retry: { initialBackoffMs: 500, maxBackoffMs: 100 } }, /retry: initialBackoffMs must not exceed maxBackoffMs/],
    [{ retry: { multiplier: 0.5 } }, /retry: multiplier must be a number >= 1/],
    [{ circuitBreaker: { failureThreshold: 0 } }, /circuitBreaker: failureThreshold must be an integer >= 1/],
    [{ circuitBreaker: { openSeconds: 1 } }, /circuitBreaker: unknown field\(s\) 'openSeconds'/],
    [{ fallback: { model: "" } }, /step 'a': fallback: model must be a non-empty string/],
    [{ fallback: { model: "b", outputs: {} } }, /fallback takes either model or outputs, not both/],
    [{ fallback: "b" }, /fallback must be \{ "model"/],
    [
      { fallback: { outputs: { y: { datatype: "FP32", shape: [2], data: [1] } } } },
      /step 'a': fallback.outputs.y: data has 1 element\(s\) but shape \[2\] needs 2/,
    ],
    [
      { fallback: { outputs: { y: { datatype: "FLOAT", shape: [1], data: [1] } } } },
      /fallback output 'y': datatype must be one of the KServe datatypes/,
    ],
  ])("refuses %j", (extra, message) => {
    expect(() => parseOperatorSpec(spec(extra))).toThrow(message);
  });
});
