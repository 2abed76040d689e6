import { describe, expect, it } from "vitest";
import { formatTimeTick } from "./number-format";

describe("formatTimeTick", () => {
  const at = new Date(2026, 11, 2, 14, 30).getTime();
  it("shows the clock with minutes within a day, and the date with the clock beyond (never the hour alone)", () => {
    expect(formatTimeTick(at, 3_600_000)).toMatch(/^14:30$/);
    const long = formatTimeTick(at, 7 * 24 * 3_600_000);
    expect(long).toMatch(/14:30$/);
    expect(long).toMatch(/2/);
    expect(long).not.toMatch(/ 14$/);
  });
});
