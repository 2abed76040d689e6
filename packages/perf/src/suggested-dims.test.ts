import { describe, expect, it } from "vitest";
import { DEFAULT_IMAGE_SIDE, DEFAULT_OTHER_DIM, DEFAULT_TEXT_LINE_WIDTH, suggestDims } from "./suggested-dims.js";

describe("suggested sizes for variable dims", () => {
  it("an OCR text line [3,48,-1] gets PaddleOCR's 320 width", () => {
    expect(suggestDims([3, 48, -1])).toEqual([3, 48, DEFAULT_TEXT_LINE_WIDTH]);
  });
  it("a CNN's [3,-1,-1] gets 224x224; a fixed tall side is copied to the other", () => {
    expect(suggestDims([3, -1, -1])).toEqual([3, DEFAULT_IMAGE_SIDE, DEFAULT_IMAGE_SIDE]);
    expect(suggestDims([3, 300, -1])).toEqual([3, 300, 300]);
    expect(suggestDims([-1, -1, 3])).toEqual([DEFAULT_IMAGE_SIDE, DEFAULT_IMAGE_SIDE, 3]);
  });
  it("a sequence [-1] and a shape that is no image get 16 per variable dim; fixed dims stay", () => {
    expect(suggestDims([-1])).toEqual([DEFAULT_OTHER_DIM]);
    expect(suggestDims([-1, -1, -1])).toEqual([16, 16, 16]);
    expect(suggestDims([7, -1])).toEqual([7, 16]);
    expect(suggestDims([16])).toEqual([16]);
    expect(suggestDims([])).toEqual([]);
  });
});
