import { describe, expect, it } from "vitest";
import { redactedCommandLine } from "./command-line-redaction.js";

describe("redactedCommandLine", () => {
  it("hides the values of secret flags, in both forms", () => {
    expect(
      redactedCommandLine([
        "node",
        "operon",
        "serve",
        "--admin-password",
        "s3cret!",
        "--database-url=postgres://u:p@h/db",
        "--http-port",
        "1",
      ]),
    ).toEqual(["node", "operon", "serve", "--admin-password", "***", "--database-url=***", "--http-port", "1"]);
  });

  it("hides a --batch-postgres connection's URL (it may hold a password)", () => {
    expect(redactedCommandLine(["operon", "serve", "--batch-postgres", "warehouse=postgresql://u:p@h/db"])).toEqual([
      "operon",
      "serve",
      "--batch-postgres",
      "***",
    ]);
  });

  it("leaves a command line without secrets alone", () => {
    expect(redactedCommandLine(["node", "operon", "serve", "--admin-password-file", "/run/pw"])).toBeUndefined();
  });
});
