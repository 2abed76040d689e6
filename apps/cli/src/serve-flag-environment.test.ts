import type { CommanderError } from "commander";
import { afterEach, describe, expect, it, vi } from "vitest";
import { operonEnvironment, SECRET_VARIABLES } from "./environment.js";
import { serveCommand } from "./serve-command.js";
import { flagEnvironmentVariable, SECRET_FLAGS } from "./serve-flag-environment.js";
import { serveFlagsSchema } from "./serve-flags.js";

/** The options commander hands `operon serve`'s action (the action itself is replaced), or the error it stops with. */
async function parse(args: string[]): Promise<Record<string, unknown>> {
  let seen: Record<string, unknown> | undefined;
  const command = serveCommand()
    .exitOverride()
    .configureOutput({ writeErr: () => {} })
    .action((flags: Record<string, unknown>) => {
      seen = flags;
    });
  await command.parseAsync(args, { from: "user" });
  return seen!;
}

async function parseError(args: string[]): Promise<string> {
  try {
    await parse(args);
  } catch (error) {
    return (error as CommanderError).message;
  }
  throw new Error("expected the flags to be refused");
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("operon serve flags from environment variables", () => {
  it("derives each variable from the flag's name by one rule", () => {
    expect(flagEnvironmentVariable("--http-port")).toBe("OPERON_HTTP_PORT");
    expect(flagEnvironmentVariable("--exit-timeout-secs")).toBe("OPERON_EXIT_TIMEOUT_SECS");
    expect(() => flagEnvironmentVariable("-p")).toThrow(/not a long flag/);
    // Every flag but the secrets has its variable, and --help says so.
    const command = serveCommand();
    const longs = command.options.map((option) => option.long!).filter((long) => long !== "--help");
    expect(longs.length).toBeGreaterThan(60);
    for (const option of command.options) {
      if (SECRET_FLAGS.has(option.long!)) expect(option.envVar).toBeUndefined();
      else expect(option.envVar).toBe(flagEnvironmentVariable(option.long!));
    }
    const help = command.helpInformation() + helpText(command);
    expect(help).toContain("env: OPERON_HTTP_PORT)");
    expect(help).toContain("OPERON_DATABASE_URL");
    expect(help).toMatch(/OPERON_ \+ the flag's name in upper case/);
  });

  it("takes values from the variables, the command line winning", async () => {
    vi.stubEnv("OPERON_MODEL_REPOSITORY", "/models");
    vi.stubEnv("OPERON_HTTP_PORT", "9000");
    vi.stubEnv("OPERON_GRPC_PORT", "9001");
    vi.stubEnv("OPERON_ALLOW_METRICS", "false");
    vi.stubEnv("OPERON_MODEL_CONTROL_MODE", "explicit");
    vi.stubEnv("OPERON_EXIT_TIMEOUT_SECS", "45");
    vi.stubEnv("OPERON_TRUSTED_PROXY", "10.0.0.0/8, fd00::/8");
    vi.stubEnv("OPERON_HTTP_ADDRESS", "0.0.0.0");
    const flags = serveFlagsSchema.parse(await parse(["--grpc-port", "7001"]));
    expect(flags).toMatchObject({
      modelRepository: ["/models"],
      httpPort: 9000,
      grpcPort: 7001,
      allowMetrics: false,
      modelControlMode: "explicit",
      exitTimeoutSecs: 45,
      trustedProxy: ["10.0.0.0/8", "fd00::/8"],
      httpAddress: "0.0.0.0",
    });
    // The flag given on the command line replaces its variable's value (repeatable ones too).
    const overridden = serveFlagsSchema.parse(await parse(["--model-repository", "/other", "--http-port", "8100"]));
    expect(overridden.modelRepository).toEqual(["/other"]);
    expect(overridden.httpPort).toBe(8100);
  });

  it("names the variable when its value is bad", async () => {
    vi.stubEnv("OPERON_MODEL_REPOSITORY", "/models");
    vi.stubEnv("OPERON_HTTP_PORT", "eighty");
    expect(await parseError([])).toMatch(
      /from env 'OPERON_HTTP_PORT' is invalid.*'eighty' is not a non-negative integer/,
    );
    // An empty variable is not 0 (a free port).
    vi.stubEnv("OPERON_HTTP_PORT", "");
    expect(await parseError([])).toMatch(/from env 'OPERON_HTTP_PORT' is invalid/);
    vi.stubEnv("OPERON_HTTP_PORT", "8000");
    vi.stubEnv("OPERON_MODEL_CONTROL_MODE", "sometimes");
    expect(await parseError([])).toMatch(
      /from env 'OPERON_MODEL_CONTROL_MODE' is invalid.*Allowed choices are none, poll, explicit/,
    );
    vi.stubEnv("OPERON_MODEL_CONTROL_MODE", "none");
    vi.stubEnv("OPERON_ALLOW_GRPC", "maybe");
    expect(await parseError([])).toMatch(/from env 'OPERON_ALLOW_GRPC' is invalid.*'maybe' is not a boolean/);
    vi.stubEnv("OPERON_ALLOW_GRPC", "true");
    vi.stubEnv("OPERON_TRUSTED_PROXY", "ingress.example.com");
    expect(await parseError([])).toMatch(/from env 'OPERON_TRUSTED_PROXY' is invalid.*not an IP address or CIDR range/);
  });

  it("still needs a model repository from somewhere", async () => {
    expect(await parseError([])).toMatch(/required option '--model-repository <path>' not specified/);
  });

  it("leaves the secret variables to environment.ts, which removes them at start", async () => {
    vi.stubEnv("OPERON_MODEL_REPOSITORY", "/models");
    vi.stubEnv("OPERON_ADMIN_PASSWORD", "from the environment");
    vi.stubEnv("OPERON_DATABASE_URL", "postgres://operon@db/operon");
    const flags = await parse([]);
    // Not a flag value: --admin-password would warn that it shows in ps.
    expect(flags.adminPassword).toBeUndefined();
    expect(flags.databaseUrl).toBeUndefined();
    expect(SECRET_VARIABLES).toContain("OPERON_DATABASE_URL");
    expect(operonEnvironment({ OPERON_DATABASE_URL: "postgres://operon@db/operon" }).OPERON_DATABASE_URL).toBe(
      "postgres://operon@db/operon",
    );
    expect(operonEnvironment({ OPERON_DATABASE_URL: "" }).OPERON_DATABASE_URL).toBeUndefined();
  });
});

/** The text commander adds after the options in --help. */
function helpText(command: ReturnType<typeof serveCommand>): string {
  let text = "";
  command.configureOutput({ writeOut: (chunk) => (text += chunk) }).exitOverride();
  try {
    command.outputHelp();
  } catch {}
  return text;
}
