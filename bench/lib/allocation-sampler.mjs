// Preloaded into a server under test (`node --import bench/lib/allocation-sampler.mjs …`, main thread and
// worker threads alike): V8's sampling heap profiler, counting every allocation, freed or not, between two
// trigger files that bench/allocations-per-request.mjs writes into OPERON_ALLOC_DIR (`start`, then `stop`).
// Each thread then writes `profile-<threadId>.json` there ({ main, collections, profile }). Bench use only.
import { existsSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";
import { PerformanceObserver, constants } from "node:perf_hooks";
import { isMainThread, threadId } from "node:worker_threads";

const dir = process.env.OPERON_ALLOC_DIR;
if (dir !== undefined) {
  const session = new Session();
  session.connect();
  const post = (method, params = {}) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  const waitFor = (name, then) => {
    const poll = setInterval(() => {
      if (!existsSync(join(dir, name))) return;
      clearInterval(poll);
      void then();
    }, 10);
    poll.unref();
  };
  waitFor("start", async () => {
    await post("HeapProfiler.enable");
    // One sample per 4 KiB allocated on average; freed objects stay in the profile (the point: garbage per request).
    await post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      // OPERON_ALLOC_SURVIVORS=1: leave out what scavenges freed, so only what outlived one is counted (promotion).
      includeObjectsCollectedByMinorGC: process.env.OPERON_ALLOC_SURVIVORS !== "1",
    });
    // Collections in the window, by kind: what the garbage costs (scavenges grow with bytes allocated).
    const collections = { minor: 0, major: 0, ms: 0 };
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) collections.minor++;
        else collections.major++;
        collections.ms += entry.duration;
      }
    });
    observer.observe({ entryTypes: ["gc"] });
    waitFor("stop", async () => {
      observer.disconnect();
      const { profile } = await post("HeapProfiler.stopSampling");
      writeFileSync(
        join(dir, `profile-${threadId}.json`),
        JSON.stringify({ main: isMainThread, collections, profile }),
      );
    });
  });
}
