// Source rules dependency-cruiser cannot see (it follows imports, not paths
// in strings). Run by `npm run check:boundaries`; exits 1 naming each offence.
// The rules and offencesIn() are exported for check-source-rules.test.ts.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const SKIP = new Set(["node_modules", "dist", ".next", ".turbo", "build", "generated", ".operon"]);
export const RULES = [
  {
    // The proto folder is @operon/protocol's: import its path from @operon/protocol/proto-dir. Catches the
    // folder itself and any path inside it ("../../protocol/proto/model_config.proto").
    name: "no-proto-by-path",
    pattern: /["'`][./]*(?:packages\/)?protocol\/proto(?:\/[^"'`]*)?["'`]/,
    message: "opens @operon/protocol's proto folder by file path; import PROTO_DIR from @operon/protocol/proto-dir",
  },
];

/** The offences in one file's text, as `file:line: rule: message`. */
export function offencesIn(file, text) {
  const offences = [];
  text.split("\n").forEach((line, index) => {
    for (const rule of RULES)
      if (rule.pattern.test(line)) offences.push(`${file}:${index + 1}: ${rule.name}: ${rule.message}`);
  });
  return offences;
}

function* sources(folder) {
  for (const name of readdirSync(folder)) {
    if (SKIP.has(name)) continue;
    const path = join(folder, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|tsx|mts|mjs|js)$/.test(name)) yield path;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const offences = [];
  for (const top of ["apps", "packages", "native", "e2e", "bench"]) {
    for (const file of sources(join(root, top)))
      offences.push(...offencesIn(relative(root, file), readFileSync(file, "utf8")));
  }
  if (offences.length > 0) {
    console.error(offences.join("\n"));
    process.exit(1);
  }
  console.log(`source rules: ${RULES.map((rule) => rule.name).join(", ")}: no offences`);
}
