#!/usr/bin/env node
// Where the gateway's CPU goes per request: runs Operon under --cpu-prof with
// the wrk load of cpu-per-request.mjs, then prints the main thread's self time
// by function (top N) and by package, as shares of the sampled time.
// Usage: node bench/profile-request-path.mjs [json|binary] [connections] [seconds] [top]
// Environment: ISOLATION=thread|inline|process, INSTANCES (default 2), PROFILE_DIR (default a temp dir),
// PROFILE_OF=instance (the instance threads' profiles instead of the gateway thread's).
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { summariseCpuProfile } from "./lib/cpu-profile-summary.mjs";
import { startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [kind = "json", connections = "16", seconds = "6", top = "40"] = process.argv.slice(2);
const ISOLATION = process.env.ISOLATION ?? "";
const INSTANCES = Number(process.env.INSTANCES ?? 2);
// The gateway thread's profile holds the HTTP frontend; an instance thread's holds thread-main.
const PROFILE_MARK = process.env.PROFILE_OF === "instance" ? "worker/dist/thread-main" : "frontends/http/http-frontend";
const profileDir = process.env.PROFILE_DIR ?? mkdtempSync(join(tmpdir(), "operon-prof-"));

const { repository } = writeAddSubRepository({
  isolation: ISOLATION,
  instances: INSTANCES,
  prefix: "operon-prof-repo-",
});
const { body, headers } = addSubRequest(kind);

const before = new Set(readdirSync(profileDir));
const operon = await startOperon(repository, ["--load-model", "*", "--model-control-mode", "explicit"], {
  nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`],
});
try {
  const request = wrkRequest(`${operon.httpUrl}/v2/models/add_sub/infer`, body, headers);
  await runWrk(request, { connections: Number(connections), seconds: 1 });
  const result = await runWrk(request, { connections: Number(connections), seconds: Number(seconds) });
  console.log(`operon ${result.requestsPerSec.toFixed(0)} req/s, p50 ${result.p50Us} µs, errors ${result.errors}`);
} finally {
  await operon.stop();
}

// The gateway's thread is the one whose profile holds the HTTP frontend (the
// control plane and the instance threads write profiles of their own).
const profiles = readdirSync(profileDir)
  .filter((name) => name.endsWith(".cpuprofile") && !before.has(name))
  .map((name) => join(profileDir, name))
  .filter((file) => readFileSync(file, "utf8").includes(PROFILE_MARK));
if (profiles.length === 0) throw new Error(`no .cpuprofile holding ${PROFILE_MARK} written in ${profileDir}`);
for (const file of profiles.slice(0, Number(process.env.PROFILES ?? 1)))
  summariseCpuProfile(file, { top: Number(top) });
