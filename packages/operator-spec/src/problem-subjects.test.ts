import { describe, expect, it } from "vitest";
import { problemNodeIds } from "./problem-subjects.js";

describe("problemNodeIds", () => {
  it("finds the steps and operator tensors the gateway's messages name", () => {
    const ids = problemNodeIds([
      "step 'second': model 'nope' is not served (load it first)",
      "tensor 'A' from operator input 'A' to step 'first' (input 'INPUT0' of model 'add_sub'): datatype INT32 does not match FP32",
      "operator output 'Y' is not produced by any step",
      "route 'pick' names unknown step 'gone'",
    ]);
    expect([...ids].sort()).toEqual(["in:A", "out:Y", "step:first", "step:gone", "step:pick", "step:second"]);
  });
});
