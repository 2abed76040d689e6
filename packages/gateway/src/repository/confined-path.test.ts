import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { confinedPath } from "./confined-path.js";

describe("confinedPath", () => {
  const root = mkdtempSync(join(tmpdir(), "operon-confined-"));
  const model = join(root, "m");
  mkdirSync(join(model, "1"), { recursive: true });
  writeFileSync(join(model, "1", "model.js"), "");
  writeFileSync(join(root, "outside.js"), "");
  symlinkSync(join(root, "outside.js"), join(model, "1", "link.js"));
  symlinkSync(join(model, "1", "model.js"), join(model, "1", "inner-link.js"));

  it("resolves names inside the model folder, following links that stay inside", async () => {
    expect(await confinedPath(model, join(model, "1"), "model.js", "f")).toBe(join(model, "1", "model.js"));
    expect(await confinedPath(model, join(model, "1"), "inner-link.js", "f")).toBe(join(model, "1", "model.js"));
    expect(await confinedPath(model, join(model, "1"), "not-there.js", "f")).toBe(join(model, "1", "not-there.js"));
  });

  it.each([
    ["../../outside.js", /points outside the model's folder/],
    ["../../../../../../tmp/x.js", /points outside the model's folder/],
    ["/etc/passwd", /must be a file name relative to the model's folder/],
    ["link.js", /is a link to a file outside the model's folder/],
  ])("refuses %s", async (name, message) => {
    await expect(confinedPath(model, join(model, "1"), name, "default_model_filename")).rejects.toMatchObject({
      kind: "INVALID_ARG",
      message: expect.stringMatching(message),
    });
  });

  it("follows links out of an operator's repository folder when told they may leave", async () => {
    expect(await confinedPath(model, join(model, "1"), "link.js", "f", { linksMayLeave: true })).toBe(
      join(root, "outside.js"),
    );
    await expect(
      confinedPath(model, join(model, "1"), "../../outside.js", "f", { linksMayLeave: true }),
    ).rejects.toThrow(/points outside/);
  });

  it("never names a server path in its message", async () => {
    const error = await confinedPath(model, join(model, "1"), "../../outside.js", "default_model_filename").catch(
      (e: Error) => e,
    );
    expect((error as Error).message).not.toContain(root);
  });
});
