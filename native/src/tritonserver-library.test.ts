// Operon's libtritonserver.so and its own backends, tested through the C++
// test host (native/build/tritonserver/bin/operon-backend-host), which drives
// them through the embedding API exactly as the worker does:
//  - the host's C++ suite (`selftest`) against operon_identity and the
//    refusal-test backends;
//  - operon_image_preprocess against the TypeScript step it replaces
//    (examples/model_repository/text_direction_preprocess), on the PNG
//    fixtures: same outputs within 1e-5.
// npm install builds all of it (native/scripts/build-tritonserver.mjs); on
// these machines g++ always exists, so a missing build fails here with the
// reason instead of skipping.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pngjs from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BUILD = path.join(ROOT, "native/build/tritonserver");
const HOST = path.join(BUILD, "bin/operon-backend-host");
const PREPROCESS_LIB = path.join(BUILD, "backends/operon_image_preprocess/libtriton_operon_image_preprocess.so");
const IMAGES = path.join(ROOT, "examples/images");
const run = promisify(execFile);

function buildProblem(): string | undefined {
  if (existsSync(HOST) && existsSync(path.join(BUILD, "lib/libtritonserver.so"))) return undefined;
  const marker = path.join(BUILD, "UNAVAILABLE");
  const reason = existsSync(marker) ? readFileSync(marker, "utf8").trim() : "no build output and no UNAVAILABLE marker";
  return `libtritonserver.so was not built (${reason}); run: node native/scripts/build-tritonserver.mjs`;
}

describe("libtritonserver.so (C++ test host)", () => {
  it("is built when a C++ compiler exists", () => {
    const gxx = spawnSync(process.env.CXX || "g++", ["--version"]);
    expect(gxx.status, "g++ is installed on every machine of this project").toBe(0);
    expect(buildProblem()).toBeUndefined();
  });

  it("passes the host's C++ suite against Operon's backends", async () => {
    expect(buildProblem()).toBeUndefined();
    const { stdout } = await run(HOST, ["selftest", BUILD], { timeout: 60_000 }).catch(
      (error: { stdout?: string; message: string }) => {
        throw new Error(`operon-backend-host selftest failed:\n${error.stdout ?? error.message}`);
      },
    );
    const failures = stdout.split("\n").filter((line) => line.startsWith("not ok"));
    expect(failures).toEqual([]);
    const summary = /^(\d+) passed, (\d+) failed$/m.exec(stdout);
    expect(summary, stdout).not.toBeNull();
    expect(Number(summary![1])).toBeGreaterThanOrEqual(20);
    expect(Number(summary![2])).toBe(0);
  });

  it("exports exactly Triton's API and Operon's host API", async () => {
    expect(buildProblem()).toBeUndefined();
    const { stdout } = await run("nm", ["-D", "--defined-only", path.join(BUILD, "lib/libtritonserver.so")]);
    const symbols = stdout
      .split("\n")
      .map((line) => line.trim().split(/\s+/)[2])
      .filter((s): s is string => Boolean(s));
    expect(symbols.filter((s) => !/^(TRITONSERVER_|TRITONBACKEND_|OperonHost)/.test(s))).toEqual([]);
    // What Triton's example backends import (minimal, recommended, identity, square, repeat) is there.
    for (const needed of [
      "TRITONBACKEND_RequestInputByIndex",
      "TRITONBACKEND_ResponseFactorySendFlags",
      "TRITONBACKEND_ModelInstanceReportResponseStatistics",
      "TRITONSERVER_InferenceTraceReportActivity",
      "TRITONSERVER_MetricFamilyNew",
      "TRITONBACKEND_StateNew",
    ]) {
      expect(symbols).toContain(needed);
    }
  });
});

/** The TypeScript step, run in-process on one PNG (its execute() with a minimal context). */
async function typescriptPreprocess(png: Buffer): Promise<Float32Array> {
  const modulePath = path.join(ROOT, "examples/model_repository/text_direction_preprocess/1/model.ts");
  const { default: Model } = (await import(modulePath)) as {
    default: new () => { initialize(a: unknown): void; execute(r: unknown[], c: unknown): unknown[] };
  };
  const model = new Model();
  model.initialize({ parameters: {} });
  const request = { input: () => ({ datatype: "BYTES", toBuffers: () => [png] }) };
  const ctx = {
    tensor: { fromTypedArray: (name: string, shape: number[], data: Float32Array) => ({ name, shape, data }) },
    error: (kind: string, message: string) => new Error(`${kind}: ${message}`),
  };
  const [response] = model.execute([request], ctx) as Array<{ outputs: Array<{ data: Float32Array }> } | Error>;
  if (response instanceof Error) throw response;
  return response!.outputs[0]!.data;
}

describe("operon_image_preprocess", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "operon-preprocess-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const fixtures = readdirSync(IMAGES).filter((f) => f.endsWith(".png"));
  it("has PNG fixtures to compare on", () => expect(fixtures.length).toBeGreaterThanOrEqual(3));

  // Both code paths: AVX2 (chosen at run time where the CPU has it) and the
  // portable loop (forced with OPERON_PREPROCESS_SCALAR).
  for (const [file, scalar] of fixtures.flatMap(
    (f) =>
      [
        [f, false],
        [f, true],
      ] as const,
  )) {
    it(`matches the TypeScript step within 1e-5 on ${file}${scalar ? " (portable loop)" : ""}`, async () => {
      expect(buildProblem()).toBeUndefined();
      const png = readFileSync(path.join(IMAGES, file));
      const decoded = pngjs.PNG.sync.read(png); // RGBA, as the TypeScript step decodes it
      const raw = path.join(dir, `${file}.rgba`);
      writeFileSync(raw, decoded.data);
      const out = path.join(dir, `${file}${scalar ? "-scalar" : ""}`);
      rmSync(out, { recursive: true, force: true });
      await import("node:fs/promises").then((fs) => fs.mkdir(out));
      const config = JSON.stringify({
        name: "preprocess",
        backend: "operon_image_preprocess",
        max_batch_size: 8,
        input: [{ name: "pixels", data_type: "TYPE_UINT8", dims: ["-1", "-1", "-1"] }],
        output: [{ name: "x", data_type: "TYPE_FP32", dims: ["3", "48", "192"] }],
      });
      const { stdout } = await run(
        HOST,
        [
          "run",
          "--name",
          "operon_image_preprocess",
          "--library",
          PREPROCESS_LIB,
          "--model-dir",
          dir,
          "--config",
          config,
          "--input-file",
          `pixels:UINT8:1,${decoded.height},${decoded.width},4:${raw}`,
          "--dump-dir",
          out,
        ],
        { env: { ...process.env, ...(scalar ? { OPERON_PREPROCESS_SCALAR: "1" } : {}) } },
      );
      expect(stdout).toContain("x FP32 [1,3,48,192]");
      const nativeBytes = readFileSync(path.join(out, "0-0-x.bin"));
      const native = new Float32Array(nativeBytes.buffer, nativeBytes.byteOffset, nativeBytes.byteLength / 4);
      const expected = await typescriptPreprocess(png);
      expect(native.length).toBe(expected.length);
      let worst = 0;
      for (let i = 0; i < expected.length; i += 1) worst = Math.max(worst, Math.abs(native[i]! - expected[i]!));
      expect(worst).toBeLessThanOrEqual(1e-5);
    });
  }

  it("refuses a wrong input with INVALID_ARG naming the input", async () => {
    expect(buildProblem()).toBeUndefined();
    const config = JSON.stringify({ name: "p", backend: "operon_image_preprocess", max_batch_size: 8 });
    const { stdout } = await run(HOST, [
      "run",
      "--name",
      "operon_image_preprocess",
      "--library",
      PREPROCESS_LIB,
      "--model-dir",
      dir,
      "--config",
      config,
      "--input",
      "pixels:INT32:1,2,2,3:" + Array(12).fill(1).join(","),
    ]);
    expect(stdout).toContain("error 3: operon_image_preprocess: input 'pixels' must be UINT8, got INT32");
  });
});
