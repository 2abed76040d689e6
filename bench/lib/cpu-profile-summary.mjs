// Where a V8 .cpuprofile's samples went: self time by package and by
// function, and inclusive time by function, as shares of the sampled time
// (printed). Shared by the request-path profilers (profile-request-path.mjs,
// profile-grpc-path.mjs).
import { readFileSync } from "node:fs";

/**
 * Prints the profile's busy share, then the top `top` entries by package,
 * function (self) and function (inclusive). `windowUs`: only samples taken
 * in [start, end] (process.hrtime µs: V8's profile clock) count, so start-up
 * and shutdown stay out; with `requests` (how many the window served) each
 * line also reads in µs of this thread per request.
 */
export function summariseCpuProfile(file, { top = 40, windowUs, requests } = {}) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  // Each sample weighs the time until the next one (µs).
  const selfUs = new Map();
  let at = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i += 1) {
    at += profile.timeDeltas[i];
    const weight = profile.timeDeltas[i + 1] ?? 0;
    if (windowUs !== undefined && (at < windowUs.start || at > windowUs.end)) continue;
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + weight);
    total += weight;
  }
  const byFunction = new Map();
  const byPackage = new Map();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id).callFrame;
    const where = frame.url.replace(/^file:\/\//, "").replace(/.*\/(packages|apps|node_modules)\//, "$1/");
    const key = `${frame.functionName || "(anonymous)"} ${where}:${frame.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const pkg = packageOf(frame.url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  }
  // Inclusive: each sample counts once for every distinct function on its stack.
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const inclusive = new Map();
  for (const [id, us] of selfUs) {
    const seen = new Set();
    for (let node = id; node !== undefined; node = parentOf.get(node)) {
      const frame = byId.get(node).callFrame;
      if (frame.url === "") continue;
      const key = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/.*\/(packages|apps|node_modules)\//, "$1/")}:${frame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  const idle = [...selfUs]
    .filter(([id]) => byId.get(id).callFrame.functionName === "(idle)")
    .reduce((sum, [, us]) => sum + us, 0);
  const share = (us) =>
    `${((100 * us) / total).toFixed(1).padStart(5)} %${requests ? `${(us / requests).toFixed(1).padStart(7)} µs/req` : ""}`;
  console.log(`busy (not idle): ${share(total - idle)}`);
  console.log(`\n${file}: ${(total / 1e6).toFixed(2)} s sampled${requests ? `, ${requests} requests` : ""}`);
  console.log("by package:");
  for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(`  ${share(us)}  ${pkg}`);
  console.log("by function (self):");
  for (const [key, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${share(us)}  ${key}`);
  console.log("by function (inclusive, JavaScript frames):");
  for (const [key, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${share(us)}  ${key}`);
}

function packageOf(url) {
  if (url === "") return "(native / VM)";
  if (url.startsWith("node:")) return "node: core";
  const match = /\/(packages|apps)\/([^/]+)\/(?:dist|src)\/(.*?)\/?[^/]*$/.exec(url);
  if (match) return `${match[1]}/${match[2]}/${match[3]}`;
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  return modules ? `node_modules/${modules[1]}` : url;
}
