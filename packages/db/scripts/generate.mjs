#!/usr/bin/env node
// Generates the Prisma Client for @operon/db without network access.
// Every `prisma` command first downloads a native schema engine; generate does
// not need one, and PRISMA_SCHEMA_ENGINE_BINARY pointing at any file stops
// the download. A real engine path, when set, is left alone.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = resolve(here, "..");
const repoRoot = resolve(pkgDir, "../..");
const schema = join(repoRoot, "prisma", "schema.prisma");

const env = { ...process.env };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const placeholder = join(pkgDir, "node_modules", ".cache", "operon-db", "schema-engine-placeholder");
  if (!existsSync(placeholder)) {
    mkdirSync(dirname(placeholder), { recursive: true });
    writeFileSync(placeholder, "#!/bin/sh\necho 'placeholder schema engine: not a real engine' >&2\nexit 1\n", {
      mode: 0o755,
    });
  }
  env.PRISMA_SCHEMA_ENGINE_BINARY = placeholder;
}
env.PRISMA_HIDE_UPDATE_MESSAGE ??= "1";
env.CHECKPOINT_DISABLE ??= "1";

const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("prisma/package.json")), "build", "index.js");
const r = spawnSync(process.execPath, [cli, "generate", "--schema", schema], { cwd: repoRoot, env, stdio: "inherit" });
if (r.error) throw r.error;
process.exit(r.status ?? 1);
