#!/usr/bin/env node
// Runs before `npm test` (the root "pretest" script): makes sure the system
// packages the system tests need are present, installing them from Debian
// when it can:
// * the independent gRPC client stack used to cross-check Operon's gRPC API
//   (e2e/python/triton_grpc_client_check.py): python3-grpcio,
//   python3-grpc-tools and python3-numpy;
// * Chromium for the console's browser tests (e2e/browser/), driven by
//   playwright-core at /usr/bin/chromium. Never `npx playwright install`: it
//   downloads a browser from a host CI machines cannot reach.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const PYTHON = process.env.OPERON_TEST_PYTHON ?? "/usr/bin/python3";
const CHROMIUM = "/usr/bin/chromium";

const requirements = [
  {
    what: "the gRPC cross-check test",
    packages: ["python3-grpcio", "python3-grpc-tools", "python3-numpy"],
    present: () =>
      existsSync(PYTHON) &&
      spawnSync(PYTHON, ["-c", "import grpc, grpc_tools.protoc, numpy"], { stdio: "ignore" }).status === 0,
    missing: `Python with grpc, grpc_tools and numpy at ${PYTHON} (set OPERON_TEST_PYTHON to use another)`,
  },
  {
    what: "the console's browser tests",
    packages: ["chromium"],
    present: () => existsSync(CHROMIUM),
    missing: `Chromium at ${CHROMIUM}`,
  },
  {
    what: "npm run bench (HTTP load generator)",
    packages: ["wrk", "curl"],
    present: () => existsSync("/usr/bin/wrk") && existsSync("/usr/bin/curl"),
    missing: "wrk and curl in /usr/bin",
  },
];

const wanted = requirements.filter((requirement) => !requirement.present());
if (wanted.length === 0) process.exit(0);

if (!existsSync("/usr/bin/apt-get")) {
  for (const requirement of wanted)
    console.error(
      `${requirement.missing} is missing (needed by ${requirement.what}), and there is no apt-get to install it.`,
    );
  process.exit(1);
}

const packages = wanted.flatMap((requirement) => requirement.packages);
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
const run = (args) =>
  execFileSync(isRoot ? args[0] : "sudo", isRoot ? args.slice(1) : args, {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
console.error(
  `Installing ${packages.join(" ")} from Debian for ${wanted.map((requirement) => requirement.what).join(" and ")}…`,
);
try {
  run(["apt-get", "update"]);
  run(["apt-get", "install", "-y", "--no-install-recommends", ...packages]);
} catch (error) {
  console.error(`Could not install ${packages.join(" ")}: ${error.message}`);
  process.exit(1);
}
const stillMissing = wanted.filter((requirement) => !requirement.present());
for (const requirement of stillMissing)
  console.error(
    `Installed ${requirement.packages.join(" ")}, but ${requirement.missing} is still missing (needed by ${requirement.what}).`,
  );
process.exit(stillMissing.length === 0 ? 0 : 1);
