import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ESM script without type declarations
import { ENSEMBLE_EXAMPLE_MODELS, EXAMPLE_MODELS } from "../examples/generate-models.mjs";
import { REPO_ROOT } from "./support/operon-process.js";

/** The committed example .onnx files are exactly what examples/generate-models.mjs writes. */
describe("example models", () => {
  for (const [root, models] of [
    ["examples/model_repository", EXAMPLE_MODELS],
    ["examples/ensemble_repository", ENSEMBLE_EXAMPLE_MODELS],
  ] as Array<[string, Record<string, () => Buffer>]>) {
    for (const [path, write] of Object.entries(models)) {
      it(`${root}/${path} matches its generator`, () => {
        const committed = readFileSync(join(REPO_ROOT, root, path));
        expect(
          Buffer.compare(write(), committed),
          `${root}/${path} differs: run node examples/generate-models.mjs`,
        ).toBe(0);
      });
    }
  }
});
