import { defineConfig } from "vitest/config";

// Unit tests sit beside the code (packages/*/src/**/*.test.ts); system tests
// that start the real server live under e2e/. Workspace packages resolve to
// their TypeScript sources through the "source" export condition, while the
// processes that system tests spawn run the built dist/ output.
export default defineConfig({
  resolve: { conditions: ["source"] },
  test: {
    include: ["packages/*/src/**/*.test.ts", "apps/*/src/**/*.test.ts", "native/src/**/*.test.ts", "e2e/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
