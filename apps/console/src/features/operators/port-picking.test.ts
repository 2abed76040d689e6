import { describe, expect, it } from "vitest";
import { CONTROL_IN, CONTROL_OUT, portHandleId, portOfHandle } from "./port-picking";

describe("port handle ids", () => {
  it("round-trip a port's name, whatever characters it holds", () => {
    for (const name of ["INPUT0", "softmax_0.tmp_0", "a:b", "with space"]) {
      expect(portOfHandle(portHandleId("input", name))).toBe(name);
      expect(portOfHandle(portHandleId("output", name))).toBe(name);
    }
    expect(portHandleId("input", "INPUT0")).toBe("in:INPUT0");
    expect(portHandleId("output", "OUTPUT0")).toBe("out:OUTPUT0");
  });

  it("are not ports when they are the hidden control handles or missing (a drop there connects nothing)", () => {
    expect(portOfHandle(CONTROL_IN)).toBeUndefined();
    expect(portOfHandle(CONTROL_OUT)).toBeUndefined();
    expect(portOfHandle(null)).toBeUndefined();
    expect(portOfHandle(undefined)).toBeUndefined();
  });
});
