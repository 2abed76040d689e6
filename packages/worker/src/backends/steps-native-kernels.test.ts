import { describe, expect, it } from "vitest";
import { StepPipeline } from "@operon/steps/step-pipeline";
import type { NativeKernels, StepTensor } from "@operon/steps/step-tensor";
import { createStepsNativeKernels, tensorOpsLibrary } from "./steps-native-kernels.js";

const IMAGENET = { scale: 1 / 255, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
const NO_FILES = { readFile: async () => Buffer.alloc(0) };

/** image.normalize alone, as an operon_steps worker builds it, with or without the native kernels. */
async function normalizer(native: NativeKernels | undefined, params: object = IMAGENET) {
  const pipeline = await StepPipeline.create(
    { steps: [{ id: "norm", step: "image.normalize", params }] },
    { inputs: [{ name: "x", datatype: "UINT8" }], outputs: [{ name: "y", datatype: "FP32" }] },
    { ...NO_FILES, native },
  );
  return async (x: StepTensor) => (await pipeline.run(new Map([["x", x]]))).get("y")!;
}

function pixels(h: number, w: number, c: number): StepTensor {
  let seed = 99;
  const data = Uint8Array.from({ length: h * w * c }, () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24);
  return { datatype: "UINT8", shape: [h, w, c], data };
}

describe("the steps' native kernels (operon_tensor_ops in the worker's process)", () => {
  it("is there where native backends are built", () => {
    expect(createStepsNativeKernels(), `expected ${tensorOpsLibrary()} (npm install builds it)`).toBeDefined();
  });

  it("normalizes 8-bit pixels to the same FP32 values as the TypeScript step, ImageNet and PP-OCR parameters", async () => {
    const kernels = createStepsNativeKernels()!;
    let nativeCalls = 0;
    // Counts the calls that reach the native kernel, to show the step did not stay in TypeScript.
    const counted: NativeKernels = {
      normalize: async (params) => {
        const kernel = await kernels.normalize(params);
        return kernel && (async (data, shape) => (nativeCalls++, kernel(data, shape)));
      },
    };
    const cases = [
      [IMAGENET, [224, 224, 3]],
      [IMAGENET, [640, 480, 3]],
      [{ scale: 0.00392156862745098, mean: [0.5], std: [0.5] }, [48, 192, 3]],
      [{ scale: 1, mean: [127.5], std: [127.5] }, [300, 200, 1]],
    ] as const;
    for (const [params, [h, w, c]] of cases) {
      {
        const x = pixels(h, w, c);
        const viaNative = await (await normalizer(counted, params))(x);
        const viaTypeScript = await (await normalizer(undefined, params))(x);
        expect(viaNative.shape).toEqual([h, w, c]);
        const a = viaNative.data as Float32Array;
        const b = viaTypeScript.data as Float32Array;
        expect(a.length).toBe(b.length);
        let worst = 0;
        for (let i = 0; i < a.length; i += 1) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
        expect(worst, `${h}x${w}x${c} ${JSON.stringify(params)}`).toBeLessThanOrEqual(1e-5);
      }
    }
    expect(nativeCalls).toBe(4);
  });

  it("leaves small images, FP32 pixels and CHW in TypeScript", async () => {
    const kernels = createStepsNativeKernels()!;
    let asked = 0;
    let ran = 0;
    const counted: NativeKernels = {
      normalize: async (params) => {
        asked++;
        const kernel = await kernels.normalize(params);
        return kernel && (async (data, shape) => (ran++, kernel(data, shape)));
      },
    };
    await (await normalizer(counted))(pixels(8, 8, 3));
    const chw = await normalizer(counted, { ...IMAGENET, layout: "CHW" });
    await chw({ datatype: "UINT8", shape: [3, 224, 224], data: new Uint8Array(3 * 224 * 224) });
    await (await normalizer(counted))({
      datatype: "FP32",
      shape: [224, 224, 3],
      data: new Float32Array(224 * 224 * 3),
    });
    expect([asked, ran]).toEqual([2, 0]);
  });
});
