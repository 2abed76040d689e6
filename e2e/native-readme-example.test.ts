import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startOperon, type RunningOperon } from "./support/operon-process.js";

/**
 * The README's "Write a native backend" stays true: its C++ backend, built
 * with its g++ command (run as written, from a folder where `native/` is
 * this checkout's), served with its config by the real server.
 */
const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const section = README.slice(README.indexOf("## Write a native backend"), README.indexOf("## `operon serve`"));

function block(after: string, language: string): string {
  const start = section.indexOf(`\`\`\`${language}\n`, section.indexOf(after));
  if (start < 0) throw new Error(`README: no \`\`\`${language} block after '${after}'`);
  const body = start + language.length + 4;
  return section.slice(body, section.indexOf("\n```", body) + 1);
}

let server: RunningOperon | undefined;
let dir: string | undefined;
afterAll(async () => {
  await server?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("the README's native backend example", () => {
  it("builds with the documented command and answers [2,4,6,8]", async () => {
    dir = mkdtempSync(join(tmpdir(), "operon-readme-native-"));
    symlinkSync(join(REPO_ROOT, "native"), join(dir, "native"));
    writeFileSync(join(dir, "double.cc"), block("A complete backend, `double.cc`", "cpp"));
    const build = block("Build it against Operon's headers", "sh");
    execFileSync("sh", ["-e", "-c", build], { cwd: dir, stdio: "pipe" });
    mkdirSync(join(dir, "models", "doubler"), { recursive: true });
    writeFileSync(join(dir, "models", "doubler", "config.pbtxt"), block("and give it a config", ""));
    server = await startOperon(["--model-repository", join(dir, "models")]);
    const response = await fetch(`${server.httpUrl}/v2/models/doubler/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { outputs: Array<{ data: number[] }> }).outputs[0]!.data).toEqual([2, 4, 6, 8]);
  }, 120_000);
});
