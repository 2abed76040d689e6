import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BACKEND_API_VERSION } from "@operon/backend-api/backend-api-version";
import { importModelModule } from "./typescript-model-loader.js";

describe("importModelModule: the backend API version a model declares", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "operon-model-api-version-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const model = async (file: string, source: string): Promise<string> => {
    const modelPath = path.join(dir, file);
    await writeFile(modelPath, source);
    return modelPath;
  };
  const EXECUTE = "execute(requests) { return requests.map(() => ({ outputs: [] })); }";

  it("fails the load of a model written for backend API 2.0, naming both versions", async () => {
    const modelPath = await model(
      "major2.ts",
      `export const operonBackendApi = { major: 2, minor: 0 };\nexport default class { ${EXECUTE} }\n`,
    );
    await expect(importModelModule(modelPath)).rejects.toMatchObject({
      kind: "INVALID_ARG",
      message: expect.stringContaining(
        `model file '${modelPath}' was written for backend API 2.0, but this server provides backend API 1.0`,
      ),
    });
  });

  it("reads a static operonBackendApi on the model class too", async () => {
    const modelPath = await model(
      "static.mjs",
      `export default class { static operonBackendApi = { major: 2, minor: 0 }; ${EXECUTE} }\n`,
    );
    await expect(importModelModule(modelPath)).rejects.toMatchObject({
      kind: "INVALID_ARG",
      message: expect.stringContaining("backend API 2.0"),
    });
  });

  it("fails a newer minor than the server's, and loads an older or equal one", async () => {
    const modelPath = await model(
      "minor.mjs",
      `export const operonBackendApi = { major: 1, minor: 1 };\nexport default class { ${EXECUTE} }\n`,
    );
    await expect(importModelModule(modelPath, { major: 1, minor: 0 })).rejects.toMatchObject({
      message: expect.stringContaining("backend API 1.1"),
    });
    await expect(importModelModule(modelPath, { major: 1, minor: 1 })).resolves.toHaveProperty("default");
    await expect(importModelModule(modelPath, { major: 1, minor: 4 })).resolves.toHaveProperty("default");
  });

  it("loads a model that declares the current version or none", async () => {
    const current = await model(
      "current.mjs",
      `export const operonBackendApi = ${JSON.stringify(BACKEND_API_VERSION)};\nexport default class { ${EXECUTE} }\n`,
    );
    await expect(importModelModule(current)).resolves.toHaveProperty("default");
    const silent = await model("silent.mjs", `export default class { ${EXECUTE} }\n`);
    await expect(importModelModule(silent)).resolves.toHaveProperty("default");
  });
});
