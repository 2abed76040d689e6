#!/usr/bin/env node
// Writes prisma/migrations/<timestamp>_<name>/migration.sql: the SQL that
// takes the database from the last committed schema.prisma (git HEAD, or
// --from <file>) to the working tree's, as diffed by Prisma's own schema
// engine (its Wasm build, so no engine download is needed). The engine
// connects to PostgreSQL through adapter-pg: OPERON_MIGRATION_DATABASE_URL,
// default postgresql://postgres@127.0.0.1:5432/postgres.
//
//   node packages/db/scripts/new-migration.mjs add_widgets
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { PrismaPg } from "@prisma/adapter-pg";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const args = process.argv.slice(2);
const name = args.find((arg) => !arg.startsWith("--"));
const fromIndex = args.indexOf("--from");
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error("usage: new-migration.mjs <snake_case_name> [--from <old schema.prisma>]");
  process.exit(1);
}
const schemaPath = join(root, "prisma/schema.prisma");
const oldSchema =
  fromIndex >= 0
    ? readFileSync(args[fromIndex + 1], "utf8")
    : execFileSync("git", ["show", "HEAD:prisma/schema.prisma"], { cwd: root, encoding: "utf8" });
const newSchema = readFileSync(schemaPath, "utf8");

// The package's entry imports its .wasm as an ES module, which Node 20 cannot; instantiate it by hand.
const engineDir = dirname(fileURLToPath(import.meta.resolve("@prisma/schema-engine-wasm")));
const bindings = await import(join(engineDir, "schema_engine_bg.js"));
const { instance } = await WebAssembly.instantiate(readFileSync(join(engineDir, "schema_engine_bg.wasm")), {
  "./schema_engine_bg.js": bindings,
});
bindings.__wbg_set_wasm(instance.exports);
instance.exports.__wbindgen_start?.();

const url = process.env.OPERON_MIGRATION_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const adapter = bindMigrationAwareSqlAdapterFactory(new PrismaPg({ connectionString: url }));
const engine = await bindings.SchemaEngine.new({ datamodels: [[schemaPath, newSchema]] }, () => {}, adapter);
const result = await engine.diff({
  from: { tag: "schemaDatamodel", files: [{ path: "old.prisma", content: oldSchema }] },
  to: { tag: "schemaDatamodel", files: [{ path: schemaPath, content: newSchema }] },
  script: true,
  exitCode: null,
  filters: { externalTables: [], externalEnums: [] },
});
const sql = result.stdout ?? "";
if (sql.trim() === "" || /This is an empty migration/.test(sql)) {
  console.log("schema.prisma has not changed since the last commit: no migration written");
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14);
const dir = join(root, "prisma/migrations", `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, "migration.sql"), sql);
console.log(`wrote ${join(dir, "migration.sql")}`);
process.exit(0);
