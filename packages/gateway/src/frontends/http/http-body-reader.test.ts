import { type IncomingMessage, type Server, type ServerResponse, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { BODY_BYTES_PER_TURN, readBody } from "./http-body-reader.js";

/** A server whose one handler is given; its URL. */
async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}

/** POSTs `body` in one write; the answer's status and text. */
function post(url: string, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers: { "content-length": body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("readBody", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  it("takes a large body a bounded slice per turn of the event loop, and every byte arrives in order", async () => {
    // libuv reads up to 32 × 64 KiB from a socket in one go: a 64 MiB body held the loop for tens of ms at a time
    // (fresh pages of its buffer fault as they are written), and health probes waited behind it (bench section 5).
    const size = 16 * 1024 * 1024;
    const sent = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) sent.writeUInt32LE(i, i);
    let turn = 0;
    let ticking = true;
    const tick = (): void => {
      turn += 1;
      if (ticking) setImmediate(tick);
    };
    const perTurn = new Map<number, number>();
    let received: Buffer | undefined;
    ({ server } = await serve((req, res) => {
      // A second listener sees the chunks as the reader does, and when.
      req.on("data", (chunk: Buffer) => perTurn.set(turn, (perTurn.get(turn) ?? 0) + chunk.length));
      setImmediate(tick);
      readBody(req, res, 64 * 1024 * 1024).then(
        (body) => {
          received = body;
          res.end("ok");
        },
        (error: Error) => {
          res.statusCode = 500;
          res.end(error.message);
        },
      );
    }));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    expect(await post(url, sent)).toEqual({ status: 200, text: "ok" });
    ticking = false;
    expect(received?.equals(sent)).toBe(true);
    // One turn may finish the socket read it paused in (a chunk is at most 64 KiB) and take the next slice.
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(BODY_BYTES_PER_TURN + 2 * 64 * 1024);
    expect(perTurn.size).toBeGreaterThanOrEqual(size / (BODY_BYTES_PER_TURN + 2 * 64 * 1024));
  });

  it("refuses a chunked body over the limit as before (same message), reading stopped near the limit", async () => {
    let refusal: string | undefined;
    let received = 0;
    ({ server } = await serve((req, res) => {
      req.on("data", (chunk: Buffer) => {
        received += chunk.length;
      });
      // Declared small enough to pass the up-front check, then longer than declared: the reader refuses it.
      readBody(req, res, 1024 * 1024).then(
        () => res.end("read"),
        (error: Error) => {
          refusal = error.message;
          res.statusCode = 413;
          res.end(error.message);
        },
      );
    }));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = request(url, { method: "POST" }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      // Written before end(): sent chunked, with no length declared up front.
      req.write(Buffer.alloc(4 * 1024 * 1024));
      req.end();
    });
    expect(chunked).toBe(413);
    expect(refusal).toMatch(/^request body of at least \d+ bytes exceeds the limit of 1048576 bytes$/);
    // Reading stopped near the limit: the pauses between slices do not resume a refused body.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received).toBeLessThan(2 * 1024 * 1024);
  });
});
