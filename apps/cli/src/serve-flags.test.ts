import { describe, expect, it } from "vitest";
import { flagProblems, serveCommand } from "./serve-command.js";
import { serveFlagsSchema } from "./serve-flags.js";

/** The options commander hands `operon serve`'s action for these arguments (the action itself is replaced). */
async function parsedFlags(args: string[]): Promise<Record<string, unknown>> {
  let seen: Record<string, unknown> | undefined;
  const command = serveCommand()
    .exitOverride()
    .action((flags: Record<string, unknown>) => {
      seen = flags;
    });
  await command.parseAsync(args, { from: "user" });
  return seen!;
}

describe("operon serve flags", () => {
  it("types every flag with its Triton default", async () => {
    const flags = serveFlagsSchema.parse(await parsedFlags(["--model-repository", "models"]));
    expect(flags).toMatchObject({
      modelRepository: ["models"],
      httpPort: 8000,
      grpcPort: 8001,
      metricsPort: 8002,
      httpAddress: "127.0.0.1",
      allowHttp: true,
      modelControlMode: "none",
      loadModel: [],
      repositoryPollSecs: 15,
      strictModelConfig: false,
      strictReadiness: true,
      exitOnError: true,
      exitTimeoutSecs: 30,
      logVerbose: 0,
      dataDir: ".operon",
      defaultMaxBatchSize: 4,
      controlPlane: true,
      console: true,
      consolePort: 3000,
      trustedProxy: [],
      apiPort: 8003,
      requireApiKey: false,
      usageSampleSecs: 15,
      usageRetentionDays: 30,
    });
    expect(flags.cacheConfig).toBeUndefined();
    expect(flags.databaseUrl).toBeUndefined();
  });

  it("types flags given in Triton's forms, repeated ones gathered", async () => {
    const flags = serveFlagsSchema.parse(
      await parsedFlags([
        "--model-repository=a",
        "--model-repository=b",
        "--model-control-mode=explicit",
        "--load-model=m1",
        "--load-model=m2",
        "--allow-grpc=false",
        "--strict-model-config",
        "--cache-config=local,size=1024",
        "--trusted-proxy=10.0.0.1",
        "--database-url=memory:",
        "--http-port=0",
      ]),
    );
    expect(flags).toMatchObject({
      modelRepository: ["a", "b"],
      modelControlMode: "explicit",
      loadModel: ["m1", "m2"],
      allowGrpc: false,
      strictModelConfig: true,
      cacheConfig: { cache: "local", settings: { size: 1024 } },
      trustedProxy: ["10.0.0.1"],
      databaseUrl: "memory:",
      httpPort: 0,
    });
  });

  it("takes how often a batch job lists the gateways again, within 1 s to 5 min", async () => {
    const repository = ["--model-repository", "models"];
    expect(serveFlagsSchema.parse(await parsedFlags(repository)).batchLaneRefreshMs).toBeUndefined();
    expect(
      serveFlagsSchema.parse(await parsedFlags([...repository, "--batch-lane-refresh-ms", "2000"])).batchLaneRefreshMs,
    ).toBe(2000);
    const issues = serveFlagsSchema.safeParse(await parsedFlags([...repository, "--batch-lane-refresh-ms", "500"]))
      .error!.issues;
    expect(flagProblems(issues)).toBe("--batch-lane-refresh-ms: Too small: expected number to be >=1000");
  });

  it("takes the rows a batch job joins into a request, 1 to 1024, and refuses others by the flag's name", async () => {
    const repository = ["--model-repository", "models"];
    expect(serveFlagsSchema.parse(await parsedFlags(repository)).batchRowsPerRequest).toBeUndefined();
    expect(
      serveFlagsSchema.parse(await parsedFlags([...repository, "--batch-rows-per-request", "1"])).batchRowsPerRequest,
    ).toBe(1);
    const issues = serveFlagsSchema.safeParse(await parsedFlags([...repository, "--batch-rows-per-request", "2000"]))
      .error!.issues;
    expect(flagProblems(issues)).toBe("--batch-rows-per-request: Too big: expected number to be <=1024");
    await expect(parsedFlags([...repository, "--batch-rows-per-request", "0"])).rejects.toThrow("greater than 0");
  });

  it("bounds the desired gateway replica count (1 to 10 by default) and refuses bounds that cannot hold", async () => {
    const repository = ["--model-repository", "models"];
    expect(serveFlagsSchema.parse(await parsedFlags(repository))).toMatchObject({
      schedulerMinGateways: 1,
      schedulerMaxGateways: 10,
    });
    const flags = await parsedFlags([
      ...repository,
      ...["--scheduler-min-gateways", "4", "--scheduler-max-gateways", "3", "--batch-window-ms", "99"],
    ]);
    const issues = serveFlagsSchema.safeParse(flags).error!.issues;
    // As `operon serve` says it: each flag by name, not a stack trace of the schema's error.
    expect(flagProblems(issues)).toBe(
      "--batch-window-ms: Too small: expected number to be >=100; --scheduler-max-gateways must be at least --scheduler-min-gateways",
    );
    expect(() => serveFlagsSchema.parse(flags)).toThrow(
      /--scheduler-max-gateways must be at least --scheduler-min-gateways/,
    );
    await expect(parsedFlags([...repository, "--scheduler-min-gateways", "0"])).rejects.toThrow(
      /--scheduler-min-gateways/,
    );
  });
});
