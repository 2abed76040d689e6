// The package boundaries of the README's "Layout" section, checked by dependency-cruiser
// over the TypeScript import graph (`npm run check:boundaries`, run by .ci/run).
// Workspace packages resolve to their sources through the "source" export
// condition, so a rule names the folders an import lands in.
//
// Allowed production imports between packages (tests may also use
// @operon/testing and, for the API's harness, the gateway and worker):
//   protocol, native, db      → nothing of ours
//   testing, model-config, perf, operator-spec, backend-api → protocol
//   steps                     → protocol, backend-api (the built-in step library; its step-catalog is browser-safe)
//   worker                    → protocol, backend-api, native, steps
//   gateway                   → protocol, model-config, operator-spec, native   (never worker, never backend-api:
//                               what backends and models are written against stays on the worker's side)
//   api                       → protocol, model-config, operator-spec, perf, db, steps (its pure modules only:
//                               step-catalog, pipeline-plan; never gateway/worker at run time), backend-api's
//                               typescript-model-api-declarations only (a file path: custom steps are type-checked
//                               against the model API, never run in the API)
//   console                   → api, for types only; operator-spec (pure, browser-safe: the spec format the editor draws)
//   apps/cli                  → any package
//   nothing imports apps/ or e2e/
const PACKAGES = [
  "api",
  "backend-api",
  "db",
  "gateway",
  "model-config",
  "operator-spec",
  "perf",
  "protocol",
  "steps",
  "testing",
  "worker",
];
const TEST = "(\\.test\\.ts$|/testing/)";

/** A rule: production code under `from` may import only the listed packages of ours. */
function onlyImports(from, allowed) {
  const forbidden = [...PACKAGES, "native"].filter((name) => name !== from && !allowed.includes(name));
  const folder = from === "native" ? "^native/" : `^packages/${from}/`;
  return {
    name: `${from}-imports-only-${allowed.length ? allowed.join("-") : "itself"}`,
    comment: `${from} may import ${allowed.length ? allowed.join(", ") : "no other package of ours"} (README.md, "Layout")`,
    severity: "error",
    from: { path: folder, pathNot: TEST },
    to: { path: `^(${forbidden.map((name) => (name === "native" ? "native/" : `packages/${name}/`)).join("|")})` },
  };
}

/**
 * The gateway's folders, top to bottom: a folder imports only folders below
 * it (frontends → auth → engine → admission, repository → operators →
 * instances → scheduling → signature, observability). Files at the
 * package's root (server.ts) wire them together and may import any.
 */
const GATEWAY_LAYERS = [
  ["frontends"],
  ["auth"],
  ["engine"],
  ["admission", "repository"],
  ["operators"],
  ["instances"],
  ["scheduling"],
  ["signature", "observability"],
];

function gatewayLayerRules() {
  return GATEWAY_LAYERS.flatMap((layer, rank) =>
    layer.map((folder) => {
      const upward = GATEWAY_LAYERS.slice(0, rank + 1)
        .flat()
        .filter((other) => other !== folder);
      return {
        name: `gateway-${folder}-imports-only-downward`,
        comment: `packages/gateway/src/${folder} may import only the folders below it (${
          GATEWAY_LAYERS.slice(rank + 1)
            .flat()
            .join(", ") || "none"
        })`,
        severity: "error",
        from: { path: `^packages/gateway/src/${folder}/`, pathNot: TEST },
        to: { path: `^packages/gateway/src/(${upward.join("|")})/` },
      };
    }),
  );
}

module.exports = {
  forbidden: [
    ...gatewayLayerRules(),
    {
      name: "gateway-frontends-see-only-the-engine-api",
      comment:
        "A frontend sees the engine's narrow API (engine-api, cancellation) and the key checks (auth), never the engine's classes: a new frontend is a sibling",
      severity: "error",
      from: { path: "^packages/gateway/src/frontends/", pathNot: TEST },
      to: {
        path: "^packages/gateway/src/",
        pathNot: "^packages/gateway/src/(frontends/|auth/|engine/engine-api\\.ts$|engine/cancellation\\.ts$)",
      },
    },
    onlyImports("protocol", []),
    onlyImports("native", []),
    onlyImports("db", []),
    onlyImports("testing", ["protocol"]),
    onlyImports("model-config", ["protocol"]),
    onlyImports("perf", ["protocol"]),
    onlyImports("operator-spec", ["protocol"]),
    onlyImports("backend-api", ["protocol"]),
    onlyImports("steps", ["protocol", "backend-api"]),
    onlyImports("worker", ["protocol", "backend-api", "native", "steps"]),
    onlyImports("gateway", ["protocol", "model-config", "operator-spec", "native"]),
    onlyImports("api", ["protocol", "model-config", "operator-spec", "perf", "db", "steps", "backend-api"]),
    {
      name: "api-imports-only-model-api-declarations",
      comment:
        "The control plane type-checks uploaded custom steps against the model API's declarations (a path); backend code runs in workers only",
      severity: "error",
      from: { path: "^packages/api/", pathNot: TEST },
      to: {
        path: "^packages/backend-api/",
        pathNot: "^packages/backend-api/src/typescript-model-api-declarations\\.ts$",
      },
    },
    {
      name: "api-imports-only-pure-steps",
      comment:
        "The control plane checks step pipelines with @operon/steps' pure modules (step-catalog, pipeline-plan); the implementations (sharp, the tokenizer) run in worker processes only",
      severity: "error",
      from: { path: "^packages/api/", pathNot: TEST },
      to: { path: "^packages/steps/", pathNot: "^packages/steps/src/(step-catalog|pipeline-plan|step-tensor)\\.ts$" },
    },
    {
      name: "gateway-and-worker-share-only-protocol",
      comment:
        "The gateway and the worker never import each other, tests included: they share only the wire contract in packages/protocol",
      severity: "error",
      from: { path: "^packages/(gateway|worker)/" },
      to: { path: "^packages/(gateway|worker)/", pathNot: "^packages/$1/" },
    },
    {
      name: "console-imports-api-types-only",
      comment:
        "The console talks to the API over tRPC: it may import @operon/api for types only, and at run time only @operon/operator-spec (the spec format, pure and browser-safe)",
      severity: "error",
      from: { path: "^apps/console/" },
      to: { path: "^(packages|native)/", pathNot: "^packages/operator-spec/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "no-package-imports-apps-or-e2e",
      comment: "apps/ and e2e/ are entry points and tests: nothing below them imports them",
      severity: "error",
      from: { path: "^(packages|native)/" },
      to: { path: "^(apps|e2e)/" },
    },
    {
      name: "production-code-never-imports-test-helpers",
      comment: "@operon/testing and the testing/ folders are for tests, system tests and benchmarks",
      severity: "error",
      from: { path: "^(packages|native|apps)/", pathNot: TEST },
      to: { path: "(^packages/testing/|/testing/)" },
    },
    {
      name: "no-circular",
      severity: "error",
      comment: "Modules of ours form a DAG (Prisma's generated client is not ours)",
      from: { pathNot: "/generated/" },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(/dist/|/\\.next/|node_modules)" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    combinedDependencies: true,
    preserveSymlinks: false,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["source", "import", "types", "default"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".d.ts"],
      mainFields: ["module", "main", "types"],
    },
  },
};
