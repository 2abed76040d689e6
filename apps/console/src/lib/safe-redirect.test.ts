import { describe, expect, it } from "vitest";
import { safeNextPath, signInPath } from "./safe-redirect";

describe("safeNextPath", () => {
  it("keeps paths on this site", () => {
    expect(safeNextPath("/api-keys?all=1")).toBe("/api-keys?all=1");
  });

  it.each([null, undefined, "", "https://evil.example/", "//evil.example/", "/\\evil.example", "api-keys"])(
    "sends %j home",
    (next) => {
      expect(safeNextPath(next)).toBe("/");
    },
  );
});

describe("signInPath", () => {
  it("comes back to the page after signing in, but not to home or sign-in itself", () => {
    expect(signInPath("/users?x=1")).toBe("/sign-in?next=%2Fusers%3Fx%3D1");
    expect(signInPath("/")).toBe("/sign-in");
    expect(signInPath("/sign-in?next=%2Fusers")).toBe("/sign-in");
  });
});
