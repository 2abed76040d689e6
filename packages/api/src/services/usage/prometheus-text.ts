/**
 * A small reader of the Prometheus text exposition format (version 0.0.4),
 * for the few series the usage sampler and the metrics router read from the
 * gateway: sample lines `name{label="value",...} value [timestamp]`.
 * Comments (# HELP, # TYPE) and blank lines are skipped; label values are
 * unescaped (\\, \", \n); values may be NaN, +Inf, -Inf.
 *
 * Why not a library: the one npm package for this (parse-prometheus-text-format)
 * ships no types, has one maintainer and a dependency, and groups by family,
 * which this code does not need. A malformed line throws an Error naming the
 * line, so a broken metrics endpoint is reported, not silently misread.
 */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parsePrometheusText(text: string): PromSample[] {
  const samples: PromSample[] = [];
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    try {
      samples.push(parseSampleLine(line));
    } catch (error) {
      throw new Error(
        `metrics text line ${index + 1} is not a Prometheus sample (${(error as Error).message}): ${line.slice(0, 200)}`,
      );
    }
  }
  return samples;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseSampleLine(line: string): PromSample {
  const name = NAME.exec(line)?.[0];
  if (name === undefined) throw new Error("no metric name");
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith("{")) {
    rest = rest.slice(1);
    for (;;) {
      rest = rest.trimStart();
      if (rest.startsWith("}")) {
        rest = rest.slice(1);
        break;
      }
      const labelName = LABEL_NAME.exec(rest)?.[0];
      if (labelName === undefined) throw new Error("bad label name");
      rest = rest.slice(labelName.length).trimStart();
      if (!rest.startsWith('="')) throw new Error(`label ${labelName} has no quoted value`);
      rest = rest.slice(2);
      let value = "";
      let closed = false;
      let i = 0;
      for (; i < rest.length; i += 1) {
        const char = rest[i]!;
        if (char === "\\") {
          const next = rest[i + 1];
          value += next === "n" ? "\n" : (next ?? "");
          i += 1;
        } else if (char === '"') {
          closed = true;
          break;
        } else {
          value += char;
        }
      }
      if (!closed) throw new Error(`label ${labelName} value is not closed`);
      labels[labelName] = value;
      rest = rest.slice(i + 1).trimStart();
      if (rest.startsWith(",")) rest = rest.slice(1);
      else if (!rest.startsWith("}")) throw new Error("expected , or } after a label");
    }
  }
  const fields = rest.trim().split(/\s+/);
  if (fields.length < 1 || fields.length > 2 || fields[0] === "")
    throw new Error("expected a value and an optional timestamp");
  return { name, labels, value: parseValue(fields[0]!) };
}

/**
 * A sample value as Prometheus reads it (Go's ParseFloat): NaN and Inf in
 * any letter case, with an optional sign. prom-client, for one, writes an
 * empty histogram's mean as "Nan".
 */
function parseValue(text: string): number {
  const special = /^([+-]?)(nan|inf|infinity)$/i.exec(text);
  if (special !== null) {
    if (special[2]!.toLowerCase() === "nan") return Number.NaN;
    return special[1] === "-" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  }
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`value '${text}' is not a number`);
  return value;
}

/** Triton's latency summaries, in microseconds, per model version: quantile ("0.5") -> value. */
export const LATENCY_SUMMARIES = {
  request: "nv_inference_request_summary_us",
  queue: "nv_inference_queue_summary_us",
  computeInfer: "nv_inference_compute_infer_summary_us",
} as const;

export type LatencySummaryKind = keyof typeof LATENCY_SUMMARIES;

/** `model\0version` -> summary kind -> quantile -> µs. Quantiles without an observation in the summary's window (NaN, or 0 as prom-client writes them) are left out. */
export type LatencyQuantiles = Map<string, Partial<Record<LatencySummaryKind, Record<string, number>>>>;

export function modelVersionKey(model: string, version: string): string {
  return `${model}\u0000${version}`;
}

export function latencyQuantiles(samples: readonly PromSample[]): LatencyQuantiles {
  const byName = new Map<string, LatencySummaryKind>(
    Object.entries(LATENCY_SUMMARIES).map(([kind, name]) => [name, kind as LatencySummaryKind]),
  );
  const result: LatencyQuantiles = new Map();
  for (const sample of samples) {
    const kind = byName.get(sample.name);
    const { model, version, quantile } = sample.labels;
    if (kind === undefined || model === undefined || quantile === undefined || !Number.isFinite(sample.value)) continue;
    // prom-client writes 0 for a quantile of an empty window (a model idle for a minute); a request
    // or compute duration is never 0 µs, so 0 there means no observation. A queue time may be 0.
    if (sample.value === 0 && kind !== "queue") continue;
    const key = modelVersionKey(model, version ?? "");
    const entry = result.get(key) ?? {};
    (entry[kind] ??= {})[quantile] = sample.value;
    result.set(key, entry);
  }
  return result;
}
