import { defineConfig } from "vitest/config";

// Unit tests sit beside the code (packages/*/src/**/*.test.ts); system tests
// that start the real server live under e2e/. Workspace packages resolve to
// their TypeScript sources through the "source" export condition, while the
// processes that system tests spawn run the built dist/ output.
//
// Two projects: "system" (units and protocol-level system tests, files in
// parallel) and "browser" (the console in Chromium, e2e/browser). Each
// browser spec starts a whole system (gateway, workers, API, Next.js
// console), so those specs run one file at a time, after the rest (see the
// root "test" script): on a 2-core machine several consoles starting at once
// starve each other.
const shared = {
  exclude: ["**/node_modules/**", "**/dist/**", "**/.next/**"],
  pool: "forks" as const,
};

export default defineConfig({
  resolve: { conditions: ["source"] },
  test: {
    projects: [
      {
        extends: true,
        test: {
          ...shared,
          name: "system",
          include: [
            "packages/*/src/**/*.test.ts",
            "apps/*/src/**/*.test.ts",
            "native/src/**/*.test.ts",
            "e2e/**/*.test.ts",
            // The CI scripts' own rules (.ci/check-source-rules.mjs).
            ".ci/*.test.ts",
          ],
          exclude: [...shared.exclude, "e2e/browser/**"],
          // One empty embedded database made for the run, copied by the tests that need one instead of
          // each running PGlite's initdb again (packages/db/src/testing/embedded-template.ts).
          globalSetup: ["packages/db/src/testing/embedded-template-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          ...shared,
          name: "browser",
          include: ["e2e/browser/**/*.test.ts"],
          // The broker of the systems that specs with `shared: true` share (e2e/browser/support/README.md).
          globalSetup: ["e2e/browser/support/global-setup.ts"],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
