import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Issue 28.14: under --require-api-key the metrics port answered without a
// key (model names) and an infer key read the workers (pids, memory). Now
// --metrics-require-key closes the metrics port to callers without a key,
// and the workers, scaling and parked-model views need the admin scope.
// Issue 28.10: POST /v2/operators/<x>/validate took any spec from anyone
// (300,000 steps, 34 MB, stalled readiness 3 s); it now needs what model
// control needs, and a spec is at most 1 MiB and 256 steps.

const bearer = (key?: string): Record<string, string> => (key !== undefined ? { authorization: `Bearer ${key}` } : {});

/** POST with "Expect: 100-continue", as curl sends large bodies: the body goes out only if the server asks for it. */
function postExpectingContinue(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: "POST",
        agent: false,
        headers: { ...headers, expect: "100-continue", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on("continue", () => req.end(body));
    req.on("error", reject);
  });
}

function operatorSpec(steps: number): object {
  return {
    maxBatchSize: 8,
    inputs: [
      { name: "A", datatype: "FP32", dims: [16] },
      { name: "B", datatype: "FP32", dims: [16] },
    ],
    outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
    steps: Array.from({ length: steps }, (_, i) => ({
      id: `s${i}`,
      kind: "model",
      model: "add_sub",
      inputs: { INPUT0: i === 0 ? "A" : `t${i - 1}`, INPUT1: "B" },
      outputs: { OUTPUT0: i === steps - 1 ? "Y" : `t${i}` },
    })),
  };
}

describe("metrics and admin views need keys; operator validation is model control", () => {
  let server: RunningOperon;
  let inferKey: string;
  let adminKey: string;
  beforeAll(async () => {
    server = await startControlPlaneServer(["--require-api-key", "--metrics-require-key", "--usage-sample-secs", "1"]);
    const admin = await signedIn(server);
    inferKey = (await admin.client.apiKeys.create.mutate({ name: "client", scopes: ["infer"] })).key;
    adminKey = (await admin.client.apiKeys.create.mutate({ name: "ops", scopes: ["admin"] })).key;
    // Keys reach the gateway within a second.
    for (
      let i = 0;
      i < 50 && (await fetch(`${server.httpUrl}/v2/models/add_sub`, { headers: bearer(inferKey) })).status !== 200;
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("--metrics-require-key: the metrics port refuses callers without a valid key, and serves any valid key", async () => {
    const anonymous = await fetch(server.metricsUrl);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe("Bearer");
    expect(await anonymous.text()).toMatch(/the metrics on this server need an API key .*--metrics-require-key/);
    expect(
      (await fetch(server.metricsUrl, { headers: bearer("opk_aaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") })).status,
    ).toBe(401);
    const withKey = await fetch(server.metricsUrl, { headers: bearer(inferKey) });
    expect(withKey.status).toBe(200);
    expect(await withKey.text()).toMatch(/nv_inference_count\{model="add_sub"/);
    // The control plane's usage sampler scrapes with its own key and keeps working.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(server.output()).not.toMatch(/metrics could not be read|metrics endpoint answered 401/);
  }, 30_000);

  it("workers, scaling and parked models need the admin scope", async () => {
    for (const path of ["/v2/operon/workers", "/v2/operon/scaling", "/v2/operon/parked"]) {
      expect((await fetch(`${server.httpUrl}${path}`)).status).toBe(401);
      const infer = await fetch(`${server.httpUrl}${path}`, { headers: bearer(inferKey) });
      expect(infer.status).toBe(403);
      expect(await infer.text()).toMatch(/lacks the 'admin' scope/);
      expect((await fetch(`${server.httpUrl}${path}`, { headers: bearer(adminKey) })).status).toBe(200);
    }
  });

  it("operator validation needs the admin scope", async () => {
    const body = JSON.stringify(operatorSpec(2));
    expect((await fetch(`${server.httpUrl}/v2/operators/twice/validate`, { method: "POST", body })).status).toBe(401);
    expect(
      (
        await fetch(`${server.httpUrl}/v2/operators/twice/validate`, {
          method: "POST",
          body,
          headers: bearer(inferKey),
        })
      ).status,
    ).toBe(403);
    const ok = await fetch(`${server.httpUrl}/v2/operators/twice/validate`, {
      method: "POST",
      body,
      headers: bearer(adminKey),
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ valid: true });
  });

  it("refuses a spec over 1 MiB before reading it, and one of more than 256 steps naming the limit, with readiness unaffected", async () => {
    const huge = JSON.stringify(operatorSpec(300_000));
    const started = Date.now();
    const tooBig = postExpectingContinue(`${server.httpUrl}/v2/operators/big/validate`, huge, bearer(adminKey));
    const ready = await fetch(`${server.httpUrl}/v2/health/ready`);
    expect(ready.status).toBe(200);
    const refused = await tooBig;
    expect(refused.status).toBe(413);
    expect(refused.text).toMatch(/request body of \d+ bytes exceeds the limit of 1048576 bytes/);
    expect(Date.now() - started).toBeLessThan(3000);
    const many = await fetch(`${server.httpUrl}/v2/operators/many/validate`, {
      method: "POST",
      body: JSON.stringify(operatorSpec(257)),
      headers: bearer(adminKey),
    });
    expect(many.status).toBe(400);
    expect(await many.text()).toMatch(/the operator spec has 257 steps; an operator may have at most 256/);
  }, 30_000);
});
