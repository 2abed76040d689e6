import { execSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { heading, visible } from "./support/console-actions.js";
import { ADD_SUB_INPUT0, ADD_SUB_INPUT1, inferAddSubUntil } from "./support/gateway-infer.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An engineer's task: make a key for a client program, see it work against the
// gateway, revoke it, see the gateway refuse it. The tests run in order on one server.
// Its own admin: the spec runs on the shared system (e2e/browser/support/README.md).
const ADMIN = { email: "keys-admin@example.com", password: "a long enough passphrase" };
const KEY_NAME = "e2e client";

describe("console: API keys work at the gateway until revoked", () => {
  const system = useSignedInConsole({ admin: ADMIN, shared: true });
  let apiKey = "";

  it("creates a key and shows it once", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
    await visible(heading(page, "API keys"));
    await visible(page.getByText("You have no keys yet"));

    await page.getByLabel("Name", { exact: true }).fill(KEY_NAME);
    expect(await page.getByRole("checkbox", { name: /^infer/ }).isChecked()).toBe(true);
    await page.getByLabel("QPS quota (optional)").fill("50");
    await page.getByRole("button", { name: "Create key" }).click();

    const notice = await visible(page.getByRole("region", { name: `Key “${KEY_NAME}” created` }));
    expect(await notice.textContent()).toContain("you will not see it again");
    apiKey = await page.getByLabel("The new API key").inputValue();
    expect(apiKey).toMatch(/^opk_[a-z2-7]{8}_[A-Za-z0-9_-]{32}$/);
    const row = await visible(page.getByRole("row", { name: new RegExp(KEY_NAME) }));
    expect(await row.textContent()).toContain(apiKey.slice(0, "opk_".length + 8));
    expect(await row.textContent()).toContain("Active");

    // Ready-made client lines with the new key, aimed at this gateway; the curl line works as pasted.
    const curlLine = await visible(page.getByLabel("With curl")).then((input) => input.inputValue());
    expect(curlLine).toBe(`curl -H 'Authorization: Bearer ${apiKey}' ${system.operon.httpUrl}/v2/models/stats`);
    // The control plane pushes the new key to the gateway, which may take a moment.
    let answer = "";
    for (
      const deadline = Date.now() + 10_000;
      !answer.includes('"model_stats"') && Date.now() < deadline;
      await new Promise((resolve) => setTimeout(resolve, 200))
    ) {
      answer = execSync(curlLine, { encoding: "utf8", timeout: 10_000 });
    }
    expect((JSON.parse(answer) as { model_stats: unknown[] }).model_stats.length, answer).toBeGreaterThan(0);
    const pythonLine = await page.getByLabel(/^With Triton's Python client/).inputValue();
    expect(pythonLine).toContain(`InferenceServerClient("${new URL(system.operon.httpUrl).host}")`);
    expect(pythonLine).toContain(`"Authorization": "Bearer ${apiKey}"`);

    await page.getByRole("button", { name: "I have copied it" }).click();
    await page.getByRole("region", { name: `Key “${KEY_NAME}” created` }).waitFor({ state: "detached" });
    await page.reload();
    await visible(page.getByRole("row", { name: new RegExp(KEY_NAME) }));
    expect(await page.content()).not.toContain(apiKey);
    expect(system.session.errors).toEqual([]);
  });

  it("the gateway accepts the key for an inference", async () => {
    const result = await inferAddSubUntil(system.operon.httpUrl, apiKey, 200);
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    const outputs = (result.body as { outputs: Array<{ name: string; data: number[] }> }).outputs;
    const sum = outputs.find((output) => output.name === "OUTPUT0")!;
    expect(sum.data).toEqual(ADD_SUB_INPUT0.map((value, index) => value + ADD_SUB_INPUT1[index]!));
  });

  it("revokes the key after confirming", async () => {
    const { page } = system.session;
    await page.getByRole("button", { name: `Revoke key ${KEY_NAME}` }).click();
    const dialog = await visible(page.getByRole("dialog", { name: `Revoke key “${KEY_NAME}”?` }));
    // Cancel first: nothing changes.
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    await visible(page.getByRole("row", { name: new RegExp(KEY_NAME) }));

    await page.getByRole("button", { name: `Revoke key ${KEY_NAME}` }).click();
    await visible(dialog);
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await dialog.waitFor({ state: "hidden" });
    await visible(page.getByText("You have no keys yet"));

    await page.getByRole("checkbox", { name: "Show revoked" }).check();
    const row = await visible(page.getByRole("row", { name: new RegExp(KEY_NAME) }));
    expect(await row.textContent()).toMatch(/Revoked/);
    expect(await row.getByRole("button").count()).toBe(0);
    expect(system.session.errors).toEqual([]);
  });

  it("the gateway then rejects the key with 401", async () => {
    const result = await inferAddSubUntil(system.operon.httpUrl, apiKey, 401);
    expect(result.status, JSON.stringify(result.body)).toBe(401);
    expect(JSON.stringify(result.body)).toMatch(/not valid/);
  });
});
