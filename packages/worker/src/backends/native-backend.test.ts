import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BackendHost, BackendRequest, BackendResponse } from "@operon/backend-api/backend";
import { DEFAULT_BACKEND_DIRECTORY } from "@operon/native/tritonserver-host";
import type { Tensor } from "@operon/protocol/tensor";
import { NativeBackend } from "./native-backend.js";

/**
 * The worker's native backend against Operon's real libtritonserver.so and
 * operon_identity (built by npm install): a large output is written by the
 * backend straight into the room the worker's host gives (its shared-memory
 * half), and the response hands back that very memory.
 */
const LIBRARY = join(DEFAULT_BACKEND_DIRECTORY, "operon_identity", "libtriton_operon_identity.so");
const ELEMENTS = 16 * 1024; // 64 KiB of FP32: above the worker's shared-memory threshold
let modelDir: string;

beforeAll(() => {
  modelDir = mkdtempSync(join(tmpdir(), "operon-native-backend-"));
});
afterAll(() => rmSync(modelDir, { recursive: true, force: true }));

function request(inputs: Tensor[]): BackendRequest & { done: Promise<BackendResponse> } {
  let finish!: (response: BackendResponse) => void;
  return {
    requestId: 1,
    id: "",
    inputs,
    outputNames: [],
    parameters: {},
    cancelled: false,
    done: new Promise((resolve) => (finish = resolve)),
    respond: (response, final) => {
      if (final) finish(response);
    },
  };
}

describe("NativeBackend", () => {
  it("writes outputs into the host's shared-memory room and answers with that memory", async () => {
    const segment = Buffer.alloc(1024 * 1024);
    const given: Buffer[] = [];
    const host = {
      infer: async () => ({ outputs: [] }),
      createExecuteGuard: async () => ({ arm: () => () => undefined, close: () => undefined }),
      allocateOutput: (byteLength: number) => {
        const room = segment.subarray(given.length * 128 * 1024, given.length * 128 * 1024 + byteLength);
        given.push(room);
        return room;
      },
      freeOutput: () => undefined,
    } satisfies BackendHost;
    const backend = new NativeBackend();
    await backend.initialize({
      modelPath: modelDir,
      config: {
        name: "big",
        backend: "operon_identity",
        max_batch_size: 4,
        input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [ELEMENTS] }],
        output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [ELEMENTS] }],
      },
      instanceName: "big_0",
      parameters: {},
      log: () => undefined,
      host,
      native: {
        backendName: "operon_identity",
        libraryPath: LIBRARY,
        backendConfig: {},
        version: "1",
        autoComplete: true,
      },
    });
    try {
      const values = Float32Array.from({ length: ELEMENTS }, (_, i) => i * 0.5);
      const input = request([
        { name: "INPUT0", datatype: "FP32", shape: [1, ELEMENTS], data: Buffer.from(values.buffer) },
      ]);
      await backend.executeRequests([input]);
      const response = await input.done;
      if ("error" in response) throw response.error;
      const output = response.outputs[0]!;
      expect(output.data.buffer).toBe(segment.buffer);
      expect(output.data.byteOffset).toBe(given[0]!.byteOffset);
      expect(new Float32Array(output.data.buffer, output.data.byteOffset, ELEMENTS)).toEqual(values);
      expect(response.timing?.computeInferNs).toBeGreaterThan(0);
    } finally {
      await backend.finalize();
    }
  });

  it("fails the load with the backend's own ModelInitialize error", async () => {
    const backend = new NativeBackend();
    await expect(
      backend.initialize({
        modelPath: modelDir,
        config: { name: "bad", backend: "operon_identity", parameters: { reject_config: { string_value: "x" } } },
        instanceName: "bad_0",
        parameters: {},
        log: () => undefined,
        native: {
          backendName: "operon_identity",
          libraryPath: LIBRARY,
          backendConfig: {},
          version: "1",
          autoComplete: true,
        },
      }),
    ).rejects.toMatchObject({
      kind: "INVALID_ARG",
      message: expect.stringMatching(/failed to initialize the model: .*reject_config/),
    });
  });
});
