import { describe, expect, it } from "vitest";
import { readCookie } from "./cookies";

describe("readCookie", () => {
  it("finds one cookie among several and decodes it", () => {
    expect(readCookie("a=1; operon_csrf=abc%2Bdef; b=2", "operon_csrf")).toBe("abc+def");
  });

  it("matches whole names only and says when the cookie is missing", () => {
    expect(readCookie("xoperon_csrf=1; operon_csrfx=2", "operon_csrf")).toBeUndefined();
    expect(readCookie("", "operon_csrf")).toBeUndefined();
  });

  it("keeps '=' inside the value", () => {
    expect(readCookie("t=ab==", "t")).toBe("ab==");
  });
});
