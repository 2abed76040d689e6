import { describe, expect, it } from "vitest";
import { bytesSampleJson, formatBytes, parseDims } from "./perf-inputs-values";

describe("perf inputs form values", () => {
  it("parses sizes separated by commas, spaces or x", () => {
    expect(parseDims("3, 48, 320", 3)).toEqual({ ok: true, dims: [3, 48, 320] });
    expect(parseDims("3x224x224", 3)).toEqual({ ok: true, dims: [3, 224, 224] });
    expect(parseDims(" 16 ", 1)).toEqual({ ok: true, dims: [16] });
  });
  it("names what is wrong: the count, or a part that is no size", () => {
    expect(parseDims("3, 48", 3)).toEqual({ ok: false, message: "give 3 sizes, e.g. 3, 224, 224" });
    expect(parseDims("3, -1, 2", 3)).toMatchObject({ ok: false, message: expect.stringContaining("'-1'") });
    expect(parseDims("0", 1)).toMatchObject({ ok: false });
  });
  it("turns a file into one b64 element of the input", () => {
    const json = JSON.parse(bytesSampleJson("image", new Uint8Array([0x89, 0x50, 0x4e, 0x47])));
    expect(json).toEqual({ data: [{ image: { b64: "iVBORw==" } }] });
    expect(formatBytes(2_500_000)).toBe("2.4 MiB");
  });
});
