import { describe, expect, it } from "vitest";
import { compileCustomStep, formatProblem, inspectCustomStep } from "./custom-step-compile.js";

/** The type check of uploaded custom steps: real TypeScript, in memory, against Node's and the model API's types. */
describe("compileCustomStep", () => {
  it("accepts a step that uses Node and the model API correctly, reading a file beside it", () => {
    const files = new Map([
      [
        "model.ts",
        `import { readFileSync } from "node:fs";
import type { ExecuteContext, TypedRequest } from "@operon/backend-api/typescript-model-api";
export default class Doubler {
  execute(requests: TypedRequest[], ctx: ExecuteContext) {
    readFileSync(new URL("./labels.txt", import.meta.url), "utf8");
    return requests.map((request) => {
      const x = request.input("x");
      return { outputs: [ctx.tensor.fromTypedArray("y", x.shape, x.toFloat32Array().map((v) => v * 2))] };
    });
  }
}
`,
      ],
    ]);
    expect(compileCustomStep(files).map(formatProblem)).toEqual([]);
  });

  it("reports type errors, unknown names and missing modules at file:line:col", () => {
    const files = new Map([
      [
        "model.ts",
        `import { helper } from "./missing.ts";
export default class Broken {
  execute(requests: number[]) {
    const count: string = requests.length;
    return undefinedName;
  }
}
`,
      ],
    ]);
    const problems = compileCustomStep(files).map(formatProblem);
    expect(problems).toEqual(
      expect.arrayContaining([
        "model.ts:1:24 Cannot find module './missing.ts' or its corresponding type declarations.",
        "model.ts:4:11 Type 'number' is not assignable to type 'string'.",
        "model.ts:5:12 Cannot find name 'undefinedName'. Did you mean 'undefined'?",
      ]),
    );
  });

  it("reports a syntax error where it is", () => {
    const files = new Map([["model.ts", "export const x = ;\nexport default class M {}\n"]]);
    expect(compileCustomStep(files).map(formatProblem)).toEqual(["model.ts:1:18 Expression expected."]);
  });

  it("does not read the server's files as modules", () => {
    const files = new Map([
      ["model.ts", `import passwd from "/etc/passwd";\nexport default class M { p = passwd; }\n`],
    ]);
    expect(compileCustomStep(files).map(formatProblem)[0]).toMatch(
      /^model\.ts:1:20 Cannot find module '\/etc\/passwd'/,
    );
  });

  it("reads the tensors model.ts declares (export const operonSignature), literals only", () => {
    const declaring = (value: string) =>
      new Map([
        [
          "model.ts",
          `import type { DeclaredSignature, TypedRequest } from "@operon/backend-api/typescript-model-api";
export const operonSignature: DeclaredSignature = ${value};
export default class Step {
  execute(requests: TypedRequest[]) {
    return [];
  }
}
`,
        ],
      ]);
    const declared = inspectCustomStep(
      declaring(`{
  maxBatchSize: 8,
  inputs: [{ name: "x", datatype: "FP32", dims: [-1, 4] }],
  outputs: [{ name: "label", datatype: "BYTES", dims: [1] }],
}`),
    );
    expect(declared).toEqual({
      problems: [],
      signature: {
        maxBatchSize: 8,
        inputs: [{ name: "x", datatype: "FP32", dims: [-1, 4] }],
        outputs: [{ name: "label", datatype: "BYTES", dims: [1] }],
      },
    });
    // Computed: refused at the part that is, without running it.
    const computed = inspectCustomStep(
      declaring(`{ inputs: [{ name: "x", datatype: "FP32", dims: [2 * 2] }], outputs: [] }`),
    );
    expect(computed.signature).toBeNull();
    expect(computed.problems.map(formatProblem)).toEqual([
      "model.ts:2:100 operonSignature must be written as a literal (objects, arrays, strings and numbers): this part is computed",
    ]);
    // The compiler catches a bad datatype where the type is written; the reader catches it where it is not.
    const untyped = new Map([
      [
        "model.ts",
        `export const operonSignature = { inputs: [{ name: "x", datatype: "FLOAT", dims: [1] }], outputs: [{ name: "y", datatype: "FP32", dims: [1] }] };
export default class Step { execute() { return []; } }
`,
      ],
    ]);
    expect(inspectCustomStep(untyped).problems.map(formatProblem)).toEqual([
      'model.ts:1:14 operonSignature: inputs[0].datatype must be a KServe datatype (FP32, INT64, BYTES…), got "FLOAT"',
    ]);
  });
});
