// Relative imports only: unit-tested outside Next.
import { formatMs } from "../../lib/number-format";
import type { RouterOutputs } from "../../lib/api-types";

/** "1 h 4 min", "3 min 20 s", "12 s": time left at the job's rate; "–" when unknown. */
export function timeLeft(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, Math.ceil(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${s} s`;
}

/** Parses the mapping box: one `INPUT=col1,col2` (numbers into a tensor) or `INPUT=text:col` / `image-path:col` / `image-bytes:col` a line. */
export type MappingLine =
  | { input: string; kind: "tensor"; columns: string[] }
  | { input: string; kind: "text" | "image-path" | "image-bytes"; column: string };

export function parseMappingLines(text: string): { mapping: MappingLine[]; problem?: string } {
  const mapping: MappingLine[] = [];
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const match = /^([^=\s]+)\s*=\s*(?:(text|image-path|image-bytes):)?(.+)$/.exec(line);
    if (match === null) return { mapping, problem: `line ${index + 1}: write INPUT=col1,col2 or INPUT=text:column` };
    const [, input = "", kind, rest = ""] = match;
    if (kind === undefined)
      mapping.push({
        input,
        kind: "tensor",
        columns: rest
          .split(",")
          .map((column) => column.trim())
          .filter(Boolean),
      });
    else mapping.push({ input, kind: kind as "text", column: rest.trim() });
  }
  return { mapping };
}

/**
 * Parses the optional rows-per-request box: empty is the server's default (undefined); else a whole number from 1
 * to `most` (the model's max_batch_size, when the form knows it; the API checks it against the model either way).
 */
export function parseRowsPerRequest(text: string, most?: number): { value?: number; problem?: string } {
  const trimmed = text.trim();
  if (trimmed === "") return {};
  const range = most !== undefined ? `1 to ${most}` : "1 or more";
  if (!/^\d+$/.test(trimmed)) return { problem: `a whole number of rows, ${range}` };
  const value = Number(trimmed);
  if (value < 1 || (most !== undefined && value > most))
    return { problem: `${value} rows: give ${range}${most !== undefined ? " (the model's max_batch_size)" : ""}` };
  return { value };
}

/** A running job's controller state, as jobs.get gives it (null when not running): the API's own type (aimd.ts). */
export type JobControlView = NonNullable<RouterOutputs["jobs"]["get"]["control"]>;

/**
 * Why a running job has the requests in flight it has, in words: its
 * concurrency follows online p99 (the API's aimd.ts), so the page says what
 * online clients see against their budget, or what the job is doing instead.
 */
export function controlText(control: JobControlView): string {
  const ms = (value: number | undefined) => formatMs(value);
  const online = `online p99 ${ms(control.onlineP99Ms)} of its ${ms(control.onlineBudgetMs)} budget`;
  switch (control.reason) {
    case "probe":
      return "paused a moment to measure online latency without the job";
    case "baseline":
      return `measured online p99 without the job: ${ms(control.baselineMs ?? control.onlineP99Ms)}`;
    case "overloaded":
      return "backing off: the gateway refused requests as busy";
    case "online-over":
      return `backing off: ${online}`;
    case "over-once":
      return `holding: ${online} (once; a second time backs off)`;
    case "job-over":
      return "backing off: the job's own requests are slower than its budget";
    case "hold":
      return `measuring online latency at this concurrency: ${online}`;
    case "within":
      return `growing: ${online}`;
    case "steady":
      return `holding at its set point: ${online}`;
    case "clear":
      return `growing fast: ${online}`;
    case "idle":
      return "none of its requests finished in the last window";
  }
}

/** A gateway's share of a job, as jobs.list/get give it (concurrency and away only while the job runs). */
export interface JobGatewayView {
  gateway: string;
  rows: number;
  concurrency: number | null;
  away: boolean | null;
}

/**
 * Which gateways served the job's rows: "host-a:8000 1,200 rows (6 in flight) · host-b:8000 1,180 rows
 * (away)". Empty for a job served by the control plane's own gateway alone (one host: nothing to tell).
 */
export function gatewaysText(gateways: readonly JobGatewayView[]): string {
  if (gateways.length === 0 || (gateways.length === 1 && gateways[0]?.gateway === "control-plane")) return "";
  return gateways
    .map((gateway) => {
      const name = gateway.gateway === "control-plane" ? "the control plane's gateway" : gateway.gateway;
      const now = gateway.away ? " (away)" : gateway.concurrency !== null ? ` (${gateway.concurrency} in flight)` : "";
      return `${name} ${gateway.rows.toLocaleString("en")} rows${now}`;
    })
    .join(" · ");
}
