// The system project's global setup (vitest.config.ts): one empty embedded
// database for the whole run, copied by the tests that need one
// (embedded-template.ts). Runs in vitest's main process before any worker starts.
import { provideEmbeddedTemplate } from "./embedded-template.js";

export default async function setup(): Promise<() => void> {
  return provideEmbeddedTemplate();
}
