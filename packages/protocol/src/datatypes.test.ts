import { describe, expect, it } from "vitest";
import { elementByteSize, elementCount, fromConfigDataType, toConfigDataType } from "./datatypes.js";

describe("datatypes", () => {
  it("maps wire names to config names and back", () => {
    expect(toConfigDataType("FP32")).toBe("TYPE_FP32");
    expect(toConfigDataType("BYTES")).toBe("TYPE_STRING");
    expect(fromConfigDataType("TYPE_STRING")).toBe("BYTES");
    expect(fromConfigDataType("TYPE_INT64")).toBe("INT64");
    expect(fromConfigDataType("TYPE_INVALID")).toBeUndefined();
    expect(fromConfigDataType("TYPE_BYTES")).toBeUndefined();
  });
  it("knows element sizes and counts", () => {
    expect(elementByteSize("FP16")).toBe(2);
    expect(elementByteSize("BYTES")).toBeUndefined();
    expect(elementCount([])).toBe(1);
    expect(elementCount([2, 3, 0])).toBe(0);
  });
});
