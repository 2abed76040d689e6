import { describe, expect, it } from "vitest";
import { parseMappingLines, timeLeft } from "./job-format";

describe("job page formatting", () => {
  it("says the time left", () => {
    expect(timeLeft(null)).toBe("–");
    expect(timeLeft(12.2)).toBe("13 s");
    expect(timeLeft(200)).toBe("3 min 20 s");
    expect(timeLeft(3840)).toBe("1 h 4 min");
  });

  it("parses column mappings, one a line, and names a bad line", () => {
    expect(parseMappingLines("X = a, b\n\nT=text:label\nI=image-path:file")).toEqual({
      mapping: [
        { input: "X", kind: "tensor", columns: ["a", "b"] },
        { input: "T", kind: "text", column: "label" },
        { input: "I", kind: "image-path", column: "file" },
      ],
    });
    expect(parseMappingLines("X a b").problem).toBe("line 1: write INPUT=col1,col2 or INPUT=text:column");
  });
});
