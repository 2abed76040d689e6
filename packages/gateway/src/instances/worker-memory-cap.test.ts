import { describe, expect, it } from "vitest";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { workerMemoryLimitBytes } from "./worker-memory-cap.js";

const MiB = 1024 * 1024;
const config = (value?: string): ModelConfigJson => ({
  name: "m",
  ...(value !== undefined ? { parameters: { worker_memory_limit_mb: { string_value: value } } } : {}),
});
const processes = { serverDefaultMb: 0, processIsolation: true, sequenceModel: false };

describe("workerMemoryLimitBytes", () => {
  it("takes the model's parameter over the server default; 0 means no cap", () => {
    expect(workerMemoryLimitBytes("m", config("256"), processes)).toBe(256 * MiB);
    expect(workerMemoryLimitBytes("m", config(), { ...processes, serverDefaultMb: 512 })).toBe(512 * MiB);
    expect(workerMemoryLimitBytes("m", config("0"), { ...processes, serverDefaultMb: 512 })).toBeUndefined();
    expect(workerMemoryLimitBytes("m", config(), processes)).toBeUndefined();
  });

  it("leaves thread instances and sequence models out of the server default", () => {
    expect(
      workerMemoryLimitBytes("m", config(), { ...processes, serverDefaultMb: 512, processIsolation: false }),
    ).toBeUndefined();
    expect(
      workerMemoryLimitBytes("m", config(), { ...processes, serverDefaultMb: 512, sequenceModel: true }),
    ).toBeUndefined();
  });

  it.each([
    ["lots", processes, /worker_memory_limit_mb must be a whole number of MiB >= 0 \(0 = no cap\), got "lots"/],
    ["-5", processes, /must be a whole number/],
    ["1.5", processes, /must be a whole number/],
    ["", processes, /must be a whole number/],
    ["100", { ...processes, processIsolation: false }, /needs worker processes/],
    ["100", { ...processes, sequenceModel: true }, /cannot apply to a sequence model/],
  ])("refuses %j with a clear error", (value, options, message) => {
    expect(() => workerMemoryLimitBytes("m", config(value), options)).toThrow(message);
  });
});
