// Writes operator-spec.schema.json from the built schema (run `npm run schema -w @operon/operator-spec`,
// which builds first). src/json-schema.test.ts fails while the committed file is out of date.
import { writeFileSync } from "node:fs";
import { operatorSpecJsonSchema } from "../dist/json-schema.js";

const target = new URL("../operator-spec.schema.json", import.meta.url);
writeFileSync(target, `${JSON.stringify(operatorSpecJsonSchema(), null, 2)}\n`);
console.log(`wrote ${target.pathname}`);
