import { describe, expect, it } from "vitest";
import { passwordProblem } from "./password-rule.js";

describe("passwordProblem", () => {
  it("accepts a long, uncommon password", () => {
    expect(passwordProblem("a long enough passphrase", "ada@example.com")).toBeUndefined();
  });

  it("refuses short passwords", () => {
    expect(passwordProblem("short")).toMatch(/at least 10 characters/);
  });

  it("refuses the email and its local part, and passwords that start with them", () => {
    expect(passwordProblem("Admin@Example.com", "admin@example.com")).toMatch(/email/);
    expect(passwordProblem("admin@example.com2024", "admin@example.com")).toMatch(/email/);
    expect(passwordProblem("engineering", "engineering@example.com")).toMatch(/'engineering'/);
    expect(passwordProblem("Engineering-2024!", "engineering@example.com")).toMatch(/'engineering'/);
    // A short local part is no name to avoid.
    expect(passwordProblem("jolly good passphrase", "jo@example.com")).toBeUndefined();
  });

  it("refuses the most common passwords, whatever their case", () => {
    expect(passwordProblem("1234567890")).toMatch(/most common/);
    expect(passwordProblem("QwertyUiop")).toMatch(/most common/);
    expect(passwordProblem("password123")).toMatch(/most common/);
  });
});
