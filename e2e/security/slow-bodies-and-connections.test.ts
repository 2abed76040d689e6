import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "../support/operon-process.js";

// Issue 28.4: slow bodies exhausted the in-flight body budget for everyone
// (7 connections declaring 426 MB and sending 7 bytes made every small
// inference answer 503 for over 90 s), a half-open request line stayed
// open, and 20,000 half-open connections ran the gateway out of file
// descriptors. Now the budget counts bytes received, slow bodies get 408,
// incomplete headers are closed after --http-headers-timeout-secs, and
// connections are capped per address and in total, refused with a 503.
// Short limits here so the test takes seconds.

const INFER_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

interface RawAnswer {
  status: number | undefined;
  text: string;
  closedAfterMs: number;
}

/** Opens a raw connection (optionally from another loopback address), writes `text`, and reports what came back and when it closed. */
function rawConnection(
  port: number,
  text: string,
  localAddress?: string,
): { socket: net.Socket; answer: Promise<RawAnswer>; connected: Promise<void> } {
  const started = Date.now();
  const socket = net.connect({ port, host: "127.0.0.1", ...(localAddress !== undefined ? { localAddress } : {}) });
  let received = "";
  socket.on("data", (chunk) => (received += chunk.toString("latin1")));
  socket.on("error", () => {});
  const connected = new Promise<void>((resolve) =>
    socket.once("connect", () => {
      if (text !== "") socket.write(text);
      resolve();
    }),
  );
  const answer = new Promise<RawAnswer>((resolve) =>
    socket.once("close", () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
      resolve({
        status: status === undefined ? undefined : Number(status),
        text: received,
        closedAfterMs: Date.now() - started,
      });
    }),
  );
  return { socket, answer, connected };
}

/** One inference on a connection of its own (no pooled keep-alive connection left behind), from `localAddress`. */
function inferOnce(port: number, localAddress = "127.0.0.1"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path: "/v2/models/add_sub/infer",
        method: "POST",
        agent: false,
        localAddress,
        headers: { "content-type": "application/json", connection: "close" },
      },
      (res) => {
        let body = "";
        res.on("data", (chunk) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on("error", reject);
    req.end(INFER_BODY);
  });
}

describe("slow bodies, idle connections and connection caps", () => {
  let server: RunningOperon;
  let port: number;
  beforeAll(async () => {
    server = await startOperon([
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "add_sub",
      "--http-max-body-bytes",
      "3000000",
      "--http-max-inflight-body-bytes",
      "4000000",
      "--http-body-timeout-secs",
      "2",
      "--http-min-body-bytes-per-sec",
      "1000",
      "--http-headers-timeout-secs",
      "2",
      "--http-max-connections",
      "30",
      "--http-max-connections-per-address",
      "12",
    ]);
    port = Number(new URL(server.httpUrl).port);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("counts the body budget by bytes received: bodies declared far past it but not sent leave inference alone, and are cut off with 408", async () => {
    const stalled = Array.from({ length: 7 }, () =>
      rawConnection(
        port,
        `POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2900000\r\n\r\n{"input`,
      ),
    );
    await Promise.all(stalled.map((c) => c.connected));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const small = await inferOnce(port);
    expect(small.status, small.body).toBe(200);
    const answers = await Promise.all(stalled.map((c) => c.answer));
    for (const answer of answers) {
      expect(answer.status).toBe(408);
      // Stalled after its first bytes, a body breaks both rules at about the same sweep: either reason is right.
      expect(answer.text).toMatch(
        /no byte of the request body arrived for \d+ s \(--http-body-timeout-secs 2\)|arrives at \d+ bytes\/s, below the minimum of 1000 \(--http-min-body-bytes-per-sec\)/,
      );
      expect(answer.closedAfterMs).toBeLessThan(6000);
    }
  }, 30_000);

  it("cuts off a body that trickles in below the minimum rate", async () => {
    const trickle = rawConnection(
      port,
      `POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n`,
    );
    await trickle.connected;
    const timer = setInterval(() => trickle.socket.write("0123456789"), 300);
    const answer = await trickle.answer;
    clearInterval(timer);
    expect(answer.status).toBe(408);
    expect(answer.text).toMatch(/arrives at \d+ bytes\/s, below the minimum of 1000 \(--http-min-body-bytes-per-sec\)/);
    expect(answer.closedAfterMs).toBeLessThan(6000);
  }, 30_000);

  it("closes a connection whose request line or headers never complete, after --http-headers-timeout-secs", async () => {
    const partialLine = rawConnection(port, "POST /v2/models/add_sub/infer HTTP/1.1\r\n");
    const partialHeaders = rawConnection(port, "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n");
    const silent = rawConnection(port, "");
    for (const connection of [partialLine, partialHeaders, silent]) {
      const answer = await connection.answer;
      expect(answer.closedAfterMs).toBeLessThan(5000);
      expect(answer.status).toBe(408);
    }
  }, 30_000);

  it("refuses connections beyond the cap per address and in total with a 503 that names the cap, and serves again once they close", async () => {
    const open: Array<ReturnType<typeof rawConnection>> = [];
    const hold = async (count: number, from: string): Promise<void> => {
      for (let i = 0; i < count; i++) {
        const connection = rawConnection(port, "", from);
        await connection.connected;
        open.push(connection);
      }
    };
    await hold(12, "127.0.0.1");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const refused = rawConnection(port, "", "127.0.0.1");
    const perAddress = await refused.answer;
    expect(perAddress.status).toBe(503);
    expect(perAddress.text).toMatch(
      /127\.0\.0\.1 has 12 HTTP connections open, the limit per address \(--http-max-connections-per-address 12\)/,
    );
    // Another address is still served.
    expect((await inferOnce(port, "127.0.0.2")).status).toBe(200);
    await hold(12, "127.0.0.2");
    await hold(6, "127.0.0.3");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const total = await rawConnection(port, "", "127.0.0.4").answer;
    expect(total.status).toBe(503);
    expect(total.text).toMatch(/the server has 30 HTTP connections open, its limit \(--http-max-connections 30\)/);
    for (const connection of open) connection.socket.destroy();
    await Promise.all(open.map((c) => c.answer));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await inferOnce(port)).status).toBe(200);
  }, 30_000);
});
