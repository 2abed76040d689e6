// Usage (after npm run build):
//   node bench/usage-series-speed.mjs [--models 5] [--days 30] [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
// How long the console's chart and cost queries (metrics.timeSeries, metrics.costs)
// take over usage samples at the sampler's default 15 s interval. Seeds a
// throw-away database (embedded by default; with --database-url, a new database
// on that server, dropped afterwards), times each range 5 times (median and
// spread) over the samples as written, then merges those older than a day
// into 5-minute samples as the sampler's hourly upkeep does, and times again.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { migrate, openDatabase } from "@operon/db";
import { COMPACT_AFTER_MS, compactUsageSamples } from "@operon/api/usage-compaction";
import { usageCosts, usageTimeSeries } from "@operon/api/usage-metrics";

const { values } = parseArgs({
  options: {
    models: { type: "string", default: "5" },
    days: { type: "string", default: "30" },
    "database-url": { type: "string" },
  },
});
const MODELS = Number(values.models);
const DAYS = Number(values.days);
const INTERVAL_SECS = 15;

let url;
let cleanup = () => {};
if (values["database-url"]) {
  const name = `operon_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: values["database-url"] });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const target = new URL(values["database-url"]);
  target.pathname = `/${name}`;
  url = target.toString();
  cleanup = async () => {
    const again = new pg.Client({ connectionString: values["database-url"] });
    await again.connect();
    await again.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await again.end();
  };
} else {
  const dir = mkdtempSync(join(tmpdir(), "operon-bench-usage-"));
  url = `file:${join(dir, "db")}`;
  cleanup = async () => rmSync(dir, { recursive: true, force: true });
}

const db = await openDatabase({ url });
try {
  await migrate(db);
  const profile = await db.prisma.hardwareProfile.create({
    data: { name: "bench-host", kind: "CPU", costPerHour: 1.5, isDefault: true },
  });
  const to = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const from = new Date(to.getTime() - DAYS * 86_400_000);
  const seedStarted = performance.now();
  for (let index = 0; index < MODELS; index += 1) {
    const model = await db.prisma.model.create({ data: { name: `bench_model_${index}` } });
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO "UsageSample" ("modelId", "modelVersion", "hardwareProfileId", "at", "intervalSeconds", "requests", "errors",
         "latencyP50Ms", "latencyP95Ms", "latencyP99Ms", "queueTimeMs", "instanceCount", "cpuUtilization", "memoryBytes")
       SELECT $1, 1, $2, t, ${INTERVAL_SECS}, 100 + (random() * 50)::int, (random() * 2)::int,
         2 + random(), 5 + random(), 9 + random(), random(), 2, 0.1 + random() * 0.2, 400000000
       FROM generate_series($3::timestamp, $4::timestamp - interval '${INTERVAL_SECS} seconds', interval '${INTERVAL_SECS} seconds') AS t`,
      model.id,
      profile.id,
      from,
      to,
    );
  }
  const rows = await db.prisma.usageSample.count();
  console.log(
    `${db.kind} database: ${rows} samples (${MODELS} models × ${DAYS} days at ${INTERVAL_SECS} s), seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`,
  );

  const ranges = [
    ["1 hour", 3_600_000],
    ["1 day", 86_400_000],
    ["7 days", 7 * 86_400_000],
    [`${DAYS} days`, DAYS * 86_400_000],
  ];
  const time = async (work) => {
    const runs = [];
    for (let round = 0; round < 5; round += 1) {
      const started = performance.now();
      await work();
      runs.push(performance.now() - started);
    }
    runs.sort((a, b) => a - b);
    return `median ${runs[2].toFixed(0)} ms (min ${runs[0].toFixed(0)}, max ${runs[4].toFixed(0)})`;
  };
  const measureRanges = async (state) => {
    for (const [label, span] of ranges) {
      const rangeFrom = new Date(to.getTime() - span);
      const series = await time(() => usageTimeSeries(db.prisma, { from: rangeFrom, to }));
      const costs = await time(() => usageCosts(db.prisma, { from: rangeFrom, to }));
      console.log(`${state} ${label.padEnd(8)} timeSeries ${series}; costs ${costs}`);
    }
  };
  await measureRanges("as sampled");
  const compactStarted = performance.now();
  const compacted = await compactUsageSamples(db.prisma, new Date(to.getTime() - COMPACT_AFTER_MS));
  console.log(
    `merged ${compacted.removed} samples into ${compacted.written} 5-minute samples in ${((performance.now() - compactStarted) / 1000).toFixed(1)} s; ${await db.prisma.usageSample.count()} samples left`,
  );
  await measureRanges("merged    ");
  const memory = process.memoryUsage();
  console.log(`process RSS at the end ${(memory.rss / 2 ** 20).toFixed(0)} MiB`);
} finally {
  await db.close();
  await cleanup();
}
