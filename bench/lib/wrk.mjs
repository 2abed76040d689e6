// Drives wrk (Debian's package; C, so the load generator costs the machine
// far less than a Node client would) against one URL with one POST body.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "wrk-post.lua");
const bodies = mkdtempSync(join(tmpdir(), "operon-bench-bodies-"));
let nextBody = 0;

/** A POST request wrk repeats: the body goes to a file once. */
export function wrkRequest(url, body, headers = {}) {
  const file = join(bodies, `body-${nextBody++}.bin`);
  writeFileSync(file, body);
  return { url, file, headers };
}

/** Runs wrk with `connections` connections on 1 thread for `seconds`; resolves with throughput and latency (µs). */
export function runWrk(request, { connections, seconds }) {
  const args = [
    "-t",
    "1",
    "-c",
    String(connections),
    "-d",
    `${seconds}s`,
    "--timeout",
    "10s",
    "-s",
    SCRIPT,
    request.url,
    "--",
    request.file,
  ];
  for (const [name, value] of Object.entries(request.headers)) args.push(`${name}: ${value}`);
  return new Promise((resolve, reject) => {
    execFile("wrk", args, { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`wrk failed: ${error.message}\n${stderr}`));
      const line = stdout.split("\n").find((text) => text.startsWith("{"));
      if (line === undefined) return reject(new Error(`wrk printed no result:\n${stdout}\n${stderr}`));
      const raw = JSON.parse(line);
      const errors = raw.non2xx + raw.connectErrors + raw.readErrors + raw.writeErrors + raw.timeouts;
      resolve({
        requestsPerSec: raw.requests / (raw.durationUs / 1e6),
        itemsPerSec: raw.requests / (raw.durationUs / 1e6),
        p50Us: raw.p50Us,
        p99Us: raw.p99Us,
        meanUs: raw.meanUs,
        p90Us: raw.p90Us,
        errors,
        firstError: errors > 0 ? JSON.stringify(raw) : undefined,
      });
    });
  });
}
