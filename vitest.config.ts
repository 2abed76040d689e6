import { defineConfig } from "vitest/config";

// Unit tests sit beside the code (packages/*/src/**/*.test.ts); system tests
// that start the real server live under e2e/. Workspace packages resolve to
// their TypeScript sources through the "source" export condition, while the
// processes that system tests spawn run the built dist/ output.
//
// Three projects, run in this order by the root "test" script:
// - "unit": the tests beside the code (and the CI scripts' own), one file at
//   a time in one reused process (isolate: false). A fresh process per file
//   cost about 0.8 s each on the loaded 2-core machine (85 small files: 74 s
//   isolated, 8 s not), most of a small file's time. The files share no
//   state: every one passes this way, and the few that stub the environment,
//   timers or spies undo it after each test.
// - "system": the protocol-level system tests in e2e/, each file in a fresh
//   process as before (they start servers, kill processes, time recoveries).
// - "browser": the console in Chromium, e2e/browser. Each browser spec starts
//   a whole system (gateway, workers, API, Next.js console), so those specs
//   run one file at a time, after the rest: on a 2-core machine several
//   consoles starting at once starve each other.
// Vitest runs one file at a time on 2 cores (its default: cores less one).
const shared = {
  exclude: ["**/node_modules/**", "**/dist/**", "**/.next/**"],
  pool: "forks" as const,
};

// The template databases made for the run (an empty and a migrated embedded one, a migrated PostgreSQL one),
// copied by the tests that need one instead of each running initdb and the migrations again.
const DATABASE_TEMPLATES_SETUP = "packages/db/src/testing/database-templates-setup.ts";

export default defineConfig({
  resolve: { conditions: ["source"] },
  test: {
    projects: [
      {
        extends: true,
        test: {
          ...shared,
          name: "unit",
          include: [
            "packages/*/src/**/*.test.ts",
            "apps/*/src/**/*.test.ts",
            "native/src/**/*.test.ts",
            // The CI scripts' own rules (.ci/check-source-rules.mjs).
            ".ci/*.test.ts",
          ],
          isolate: false,
          globalSetup: [DATABASE_TEMPLATES_SETUP],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          ...shared,
          name: "system",
          include: ["e2e/**/*.test.ts"],
          exclude: [...shared.exclude, "e2e/browser/**"],
          globalSetup: [DATABASE_TEMPLATES_SETUP],
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
