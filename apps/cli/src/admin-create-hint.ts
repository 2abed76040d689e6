/**
 * How the person who started `operon serve` runs `operon admin create`: from an npm script (`npm start` in a
 * checkout) `operon` is not on their PATH, and `npx operon` finds the workspace's bin; an installed Operon has it.
 */
export function adminCreateCommand(env: NodeJS.ProcessEnv = process.env): string {
  return env["npm_lifecycle_event"] !== undefined ? "npx operon admin create" : "operon admin create";
}
