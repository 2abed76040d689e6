import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import { REPO_ROOT, startOperon, type RunningOperon } from "../support/operon-process.js";

/**
 * Native code through the load API: a `file:` upload that brings a native
 * backend (a shared library, or a config naming a non-built-in backend)
 * runs with the server's rights, so it needs --allow-native-uploads (off by
 * default) and the admin scope; the audit log records the library's SHA-256.
 */
const IDENTITY = readFileSync(
  join(REPO_ROOT, "native/build/tritonserver/backends/operon_identity/libtriton_operon_identity.so"),
);

const config = (name: string, backend: string): string =>
  JSON.stringify({
    name,
    backend,
    max_batch_size: 8,
    input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }],
    output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }],
  });

async function load(
  server: RunningOperon,
  name: string,
  parameters: Record<string, string>,
  key?: string,
): Promise<{ status: number; error?: string }> {
  const response = await fetch(`${server.httpUrl}/v2/repository/models/${name}/load`, {
    method: "POST",
    headers: key !== undefined ? { authorization: `Bearer ${key}` } : {},
    body: JSON.stringify({ parameters }),
  });
  const body = (await response.json().catch(() => ({}))) as { error?: string };
  return { status: response.status, ...(body.error !== undefined ? { error: body.error } : {}) };
}

const withLibrary = (name: string): Record<string, string> => ({
  config: config(name, "uploaded_native"),
  "file:1/libtriton_uploaded_native.so": IDENTITY.toString("base64"),
});

const servers: RunningOperon[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

describe("native backends from load API uploads", () => {
  it("are refused without --allow-native-uploads, naming the flag; repository models are not affected", async () => {
    const server = await startOperon([
      "--model-repository",
      join(REPO_ROOT, "examples/model_repository"),
      "--model-control-mode",
      "explicit",
      "--load-model",
      "identity_native",
    ]);
    servers.push(server);
    const library = await load(server, "sneaky", withLibrary("sneaky"));
    expect(library.status).toBe(403);
    expect(library.error).toMatch(
      /uploads a shared library \(1\/libtriton_uploaded_native\.so\).*needs the server flag --allow-native-uploads/,
    );
    // A config naming a native backend for uploaded files (it would load whatever library that name finds).
    const named = await load(server, "sneaky", {
      config: config("sneaky", "operon_identity"),
      "file:1/notes.txt": Buffer.from("hi").toString("base64"),
    });
    expect(named.status).toBe(403);
    expect(named.error).toMatch(
      /names the native backend 'operon_identity' for uploaded files.*--allow-native-uploads/,
    );
    expect((await fetch(`${server.httpUrl}/v2/models/identity_native/ready`)).status).toBe(200);
  }, 120_000);

  it("with --allow-native-uploads need the admin scope, load, serve, and are audited with the library's SHA-256", async () => {
    const server = await startControlPlaneServer(["--allow-native-uploads"]);
    servers.push(server);
    const admin = await signedIn(server);
    const { key: inferKey } = await admin.client.apiKeys.create.mutate({ name: "client", scopes: ["infer"] });
    const { key: adminKey, summary } = await admin.client.apiKeys.create.mutate({
      name: "ops",
      scopes: ["admin", "infer"],
    });
    const refused = await load(server, "uploaded", withLibrary("uploaded"), inferKey);
    expect(refused.status).toBe(403);
    expect(refused.error).toMatch(/lacks the 'admin' scope/);

    const loaded = await load(server, "uploaded", withLibrary("uploaded"), adminKey);
    expect(loaded.status, loaded.error).toBe(200);
    const response = await fetch(`${server.httpUrl}/v2/models/uploaded/infer`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}` },
      body: JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { outputs: Array<{ data: number[] }> }).outputs[0]!.data).toEqual([1, 2, 3, 4]);

    const sha256 = createHash("sha256").update(IDENTITY).digest("hex");
    const deadline = Date.now() + 10_000;
    let after: unknown;
    while (Date.now() < deadline) {
      const { events } = await admin.client.audit.list.query({ action: "gateway.model.load", limit: 10 });
      after = events.find((event) => event.apiKeyId === summary.id && event.targetId === "uploaded")?.after;
      if (after !== undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(after).toMatchObject({ nativeLibraries: [{ file: "1/libtriton_uploaded_native.so", sha256 }] });
  }, 180_000);
});
