// Source rules dependency-cruiser cannot see (it follows imports, not paths
// in strings). Run by `npm run check:boundaries`; exits 1 naming each offence.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const SKIP = new Set(["node_modules", "dist", ".next", ".turbo", "build", "generated", ".operon"]);
const RULES = [
  {
    // The proto folder is @operon/protocol's: import its path from @operon/protocol/proto-dir.
    name: "no-proto-by-path",
    pattern: /["'`][./]*(?:packages\/)?protocol\/proto["'`]/,
    message: "opens @operon/protocol's proto folder by file path; import PROTO_DIR from @operon/protocol/proto-dir",
  },
];

function* sources(folder) {
  for (const name of readdirSync(folder)) {
    if (SKIP.has(name)) continue;
    const path = join(folder, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|tsx|mts|mjs|js)$/.test(name)) yield path;
  }
}

const offences = [];
for (const top of ["apps", "packages", "native", "e2e", "bench"]) {
  for (const file of sources(join(root, top))) {
    const lines = readFileSync(file, "utf8").split("\n");
    lines.forEach((line, index) => {
      for (const rule of RULES)
        if (rule.pattern.test(line))
          offences.push(`${relative(root, file)}:${index + 1}: ${rule.name}: ${rule.message}`);
    });
  }
}
if (offences.length > 0) {
  console.error(offences.join("\n"));
  process.exit(1);
}
console.log(`source rules: ${RULES.map((rule) => rule.name).join(", ")}: no offences`);
