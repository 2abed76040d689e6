import { describe, expect, it } from "vitest";
import { instancePlacementHint } from "./instance-placement-hint";

const ISOLATION = (value: string) => ({ operon_isolation: { string_value: value } });

describe("instancePlacementHint", () => {
  it("follows the server's --backend-isolation for an ONNX model whose config names none", () => {
    expect(instancePlacementHint({ backend: "onnxruntime" }, "thread")).toMatch(
      /^Each instance is an ONNX Runtime session on a thread of the gateway process \(this server's --backend-isolation thread\)/,
    );
    expect(instancePlacementHint({ backend: "onnxruntime" }, "process")).toMatch(
      /^Each instance is an ONNX Runtime session in a worker process of its own \(this server's --backend-isolation process\)/,
    );
    expect(instancePlacementHint({ backend: "onnxruntime" }, "auto")).toMatch(
      /^Each instance runs on the gateway's event loop if the model proves tiny .*, else on a thread of the gateway process \(this server's --backend-isolation auto\)/,
    );
  });

  it("follows the config's own operon_isolation over the server's default", () => {
    expect(instancePlacementHint({ backend: "onnxruntime", parameters: ISOLATION("process") }, "thread")).toMatch(
      /in a worker process of its own \(this config's operon_isolation\)/,
    );
    expect(instancePlacementHint({ backend: "onnxruntime", parameters: ISOLATION("inline") }, "process")).toMatch(
      /on the gateway's event loop itself \(this config's operon_isolation\)/,
    );
  });

  it("says user code runs in worker processes whatever the default, and claims nothing while the default is unknown", () => {
    expect(instancePlacementHint({ backend: "typescript" }, "thread")).toMatch(
      /^Each instance is a worker process of its own \(backend 'typescript' runs user code/,
    );
    expect(instancePlacementHint({ backend: "onnxruntime" }, null)).toBe("The Workers page shows where each one runs.");
  });
});
