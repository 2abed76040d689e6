import { fileURLToPath } from "node:url";

/**
 * Where the TypeScript model API's declarations (typescript-model-api.d.ts)
 * lie once built: the control plane type-checks uploaded custom steps
 * against them (as the module `@operon/backend-api/typescript-model-api`)
 * before storing anything. A path, not an import: the API reads the file as
 * the compiler's input and never runs backend code.
 */
export const TYPESCRIPT_MODEL_API_DECLARATIONS = fileURLToPath(new URL("./typescript-model-api.d.ts", import.meta.url));
