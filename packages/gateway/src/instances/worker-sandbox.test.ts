import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isSandboxed, sandboxHeapLimitMb, sandboxNodeFlags, workerRuntimeReadPaths } from "./worker-sandbox.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

describe("isSandboxed", () => {
  const config = (value?: string) =>
    value === undefined ? {} : { parameters: { operon_sandbox: { string_value: value } } };

  it("reads the operon_sandbox parameter of a typescript model", () => {
    expect(isSandboxed("m", "typescript", config("true"))).toBe(true);
    expect(isSandboxed("m", "typescript", config("false"))).toBe(false);
    expect(isSandboxed("m", "typescript", config())).toBe(false);
    expect(isSandboxed("m", "typescript", config("false"), { operon_sandbox: "true" })).toBe(true);
  });

  it("refuses a value other than true/false, and a backend that runs no TypeScript", () => {
    expect(() => isSandboxed("m", "typescript", config("yes"))).toThrow(
      `model 'm': parameter operon_sandbox must be "true" or "false", got "yes"`,
    );
    expect(() => isSandboxed("m", "onnxruntime", config("true"))).toThrow(
      "model 'm': parameter operon_sandbox applies to the typescript backend, not 'onnxruntime'",
    );
  });
});

describe("workerRuntimeReadPaths", () => {
  const paths = workerRuntimeReadPaths(join(ROOT, "packages/worker/dist/main.js"));

  it("names the worker package, the workspace packages it imports and node_modules", () => {
    expect(paths).toContain(join(ROOT, "packages/worker"));
    expect(paths).toContain(join(ROOT, "packages/protocol"));
    expect(paths).toContain(join(ROOT, "packages/backend-api"));
    expect(paths).toContain(join(ROOT, "native"));
    expect(paths).toContain(join(ROOT, "node_modules"));
    for (const path of paths) expect(existsSync(path)).toBe(true);
  });

  it("leaves out the installation's other folders and packages the worker does not import", () => {
    expect(paths).not.toContain(ROOT);
    expect(paths).not.toContain(join(ROOT, "packages/api"));
    expect(paths).not.toContain(join(ROOT, "packages/gateway"));
    expect(paths.some((path) => path.startsWith(join(ROOT, "examples")))).toBe(false);
  });
});

describe("sandboxNodeFlags", () => {
  it("turns the permission model on with reads only, and the heap limit", () => {
    const flags = sandboxNodeFlags({ readPaths: ["/a", "/b"], heapLimitMb: 128, wrapper: ["unshare", "--net"] });
    expect(flags).toEqual([
      "--experimental-permission",
      "--allow-fs-read=/a",
      "--allow-fs-read=/b",
      "--max-old-space-size=128",
      "--no-warnings",
    ]);
    expect(flags.some((flag) => /allow-(fs-write|child-process|worker|addons|wasi)/.test(flag))).toBe(false);
    expect(sandboxHeapLimitMb({ memoryMb: 512, cpuMsPerExecution: 1 })).toBe(256);
  });
});
