/**
 * Custom metric families of native backends (TRITONSERVER_MetricFamilyNew),
 * as each worker process publishes them: Prometheus text exposition lines.
 * Every worker has its own copy of the families (a backend creates them
 * in each process it loads in), so the same series can come from several
 * workers (two instances of one model): merged here into one series whose
 * value is the sum over workers, as a single Triton process would count it.
 * HELP and TYPE lines appear once per family, the first seen.
 *
 * Lenient by contract: a line that is not `# HELP`, `# TYPE` or
 * `<series> <number>` is dropped, so one bad backend cannot break the scrape.
 */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?)\s+(\S+)$/;
const COMMENT = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*)(?: (.*))?$/;

export function mergeBackendMetrics(texts: Iterable<string>, reserved: ReadonlySet<string> = new Set()): string {
  const families = new Map<string, { help?: string; type?: string; samples: Map<string, number> }>();
  const familyOf = (name: string) => {
    let family = families.get(name);
    if (family === undefined) families.set(name, (family = { samples: new Map() }));
    return family;
  };
  for (const text of texts) {
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line === "") continue;
      const comment = COMMENT.exec(line);
      if (comment !== null) {
        const family = familyOf(comment[2]!);
        if (comment[1] === "HELP") family.help ??= comment[3] ?? "";
        else family.type ??= comment[3] ?? "untyped";
        continue;
      }
      const sample = SAMPLE.exec(line);
      if (sample === null) continue;
      const value = Number(sample[2]);
      if (Number.isNaN(value) && sample[2] !== "NaN") continue;
      const series = sample[1]!;
      const name = series.replace(/\{.*$/, "");
      // Histogram and summary series (_bucket, _sum, _count) belong to their family's HELP/TYPE.
      const base = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
      const family = familyOf(families.has(base) ? base : name);
      family.samples.set(series, (family.samples.get(series) ?? 0) + value);
    }
  }
  const lines: string[] = [];
  for (const [name, family] of families) {
    // Never shadow Operon's own families (nv_*): a backend cannot redefine them.
    if (reserved.has(name) || family.samples.size === 0) continue;
    if (family.help !== undefined) lines.push(`# HELP ${name} ${family.help}`);
    if (family.type !== undefined) lines.push(`# TYPE ${name} ${family.type}`);
    for (const [series, value] of family.samples) lines.push(`${series} ${value}`);
  }
  return lines.length > 0 ? `${lines.join("\n")}\n` : "";
}
