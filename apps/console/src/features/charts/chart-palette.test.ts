import { describe, expect, it } from "vitest";
import { SERIES_COLORS } from "./chart-palette";

describe("SERIES_COLORS", () => {
  it("gives each meaning its own colour (p50 is not the requests line's blue)", () => {
    const colours = Object.values(SERIES_COLORS).map((colour) => colour.toLowerCase());
    expect(new Set(colours).size).toBe(colours.length);
  });
});
