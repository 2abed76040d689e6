import { describe, expect, it } from "vitest";
import { compileCustomStep, formatProblem } from "./custom-step-compile.js";

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
});
