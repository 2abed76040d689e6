import { describe, expect, it } from "vitest";
import { adminCreateCommand } from "./admin-create-hint.js";

describe("adminCreateCommand", () => {
  it("says npx for npm start users (operon is not on their PATH) and operon for an installed one", () => {
    expect(adminCreateCommand({ npm_lifecycle_event: "start" })).toBe("npx operon admin create");
    expect(adminCreateCommand({})).toBe("operon admin create");
  });
});
