import { describe, expect, it } from "vitest";
import { decodeInferRequest } from "./grpc/grpc-infer-codec.js";
import type { WireInferRequest } from "./grpc/grpc-wire.js";

// Finding 16: gRPC accepted priority -5 and unknown triton_ parameters that HTTP refuses.

const request = (parameters: WireInferRequest["parameters"]): WireInferRequest =>
  ({
    model_name: "m",
    model_version: "",
    id: "",
    parameters,
    inputs: [],
    outputs: [],
    raw_input_contents: [],
  }) as unknown as WireInferRequest;

describe("gRPC ModelInfer parameters follow HTTP's rules", () => {
  it("refuses a negative priority", () => {
    expect(() =>
      decodeInferRequest(request({ priority: { parameter_choice: "int64_param", int64_param: "-5" } } as never)),
    ).toThrow("'parameters.priority' must be a non-negative integer, got -5");
  });

  it("refuses unknown triton_ parameters, but lets the frontend allow the ones it reads", () => {
    const wire = request({
      triton_enable_empty_final_response: { parameter_choice: "bool_param", bool_param: true },
      triton_made_up: { parameter_choice: "bool_param", bool_param: true },
    } as never);
    expect(() => decodeInferRequest(wire, ["triton_enable_empty_final_response"])).toThrow(
      /reserved for Triton usage .* got 'triton_made_up'/,
    );
    const allowed = request({
      triton_enable_empty_final_response: { parameter_choice: "bool_param", bool_param: true },
    } as never);
    expect(decodeInferRequest(allowed, ["triton_enable_empty_final_response"]).parameters).toEqual({
      triton_enable_empty_final_response: true,
    });
    expect(() => decodeInferRequest(allowed)).toThrow(/reserved/);
  });

  it("accepts priority and timeout as unsigned integers", () => {
    const wire = request({
      priority: { parameter_choice: "uint64_param", uint64_param: "2" },
      timeout: { parameter_choice: "int64_param", int64_param: "100" },
    } as never);
    expect(decodeInferRequest(wire).parameters).toEqual({ priority: 2, timeout: 100 });
  });
});
