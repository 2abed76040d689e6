import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Container } from "kubernetes-models/v1/Container";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Service } from "kubernetes-models/v1/Service";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { parseAllDocuments } from "yaml";
import { createTestPostgresDatabase } from "@operon/db/testing/test-databases";
import { serveCommand } from "./serve-command.js";
import { flagEnvironmentVariable } from "./serve-flag-environment.js";
import { serveFlagsSchema } from "./serve-flags.js";
import { DESIRED_GATEWAY_REPLICAS_METRIC } from "@operon/api/resource-scheduler-defaults";

// deploy/kubernetes, checked without a cluster: every object against the Kubernetes schemas
// (kubernetes-models' validators, generated from the API's OpenAPI), every Kustomization's files
// present, the variants' patches applied and the result validated again, and what the manifests
// say about the server (variable names, values, ports, probe paths, drain time) against the real
// flag definitions and a real server.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const KUBERNETES = join(ROOT, "deploy/kubernetes");
const CLI = join(ROOT, "apps/cli/dist/main.js");
const flagsDefaultHttpPort = 8000;

type Manifest = Record<string, any>;

/** The models that validate each kind this folder uses; an unknown kind fails the test. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  "v1/ConfigMap": ConfigMap,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "v1/Service": Service,
  "apps/v1/Deployment": Deployment,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};

function yamlFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

function load(path: string): Manifest[] {
  return parseAllDocuments(readFileSync(path, "utf8")).map((document) => {
    if (document.errors.length > 0) throw new Error(`${path}: ${document.errors[0]!.message}`);
    return document.toJS() as Manifest;
  });
}

function validate(manifest: Manifest, where: string): void {
  const Model = MODELS[`${manifest.apiVersion}/${manifest.kind}`];
  if (Model === undefined) throw new Error(`${where}: no schema for ${manifest.apiVersion} ${manifest.kind}`);
  try {
    new Model(manifest).validate();
  } catch (error) {
    throw new Error(`${where}: ${manifest.kind} ${manifest.metadata?.name}: ${(error as Error).message}`);
  }
}

/**
 * A strategic-merge patch as kustomize applies these: maps merge, lists of named objects
 * (containers, ports, env, volumes) merge by name, other lists (an HPA's metrics) are replaced.
 */
function mergePatch(base: any, patch: any): any {
  if (Array.isArray(patch)) {
    if (!Array.isArray(base) || !patch.every((item) => typeof item?.name === "string")) return patch;
    const merged = base.map((item) => {
      const over = patch.find((candidate) => candidate.name === item?.name);
      return over === undefined ? item : mergePatch(item, over);
    });
    return [...merged, ...patch.filter((item) => !base.some((existing) => existing?.name === item.name))];
  }
  if (patch === null || typeof patch !== "object" || base === null || typeof base !== "object") return patch;
  const merged = { ...base };
  for (const [key, value] of Object.entries(patch)) merged[key] = key in base ? mergePatch(base[key], value) : value;
  return merged;
}

/** A Kustomization's objects: its resources (files or other kustomizations) with its patches applied. */
function build(folder: string): Manifest[] {
  const [kustomization] = load(join(folder, "kustomization.yaml"));
  expect(kustomization).toMatchObject({ apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization" });
  let objects = (kustomization!.resources as string[]).flatMap((resource) => {
    const path = join(folder, resource);
    return statSync(path).isDirectory() ? build(path) : load(path);
  });
  for (const { path, target } of (kustomization!.patches ?? []) as Array<{ path: string; target: Manifest }>) {
    const [patch] = load(join(folder, path));
    const matches = objects.filter((o) => o.kind === target.kind && o.metadata.name === target.name);
    expect(matches, `${folder}: patch ${path} must match one object`).toHaveLength(1);
    objects = objects.map((o) => (matches.includes(o) ? mergePatch(o, patch) : o));
  }
  return objects;
}

const base = build(join(KUBERNETES, "base"));
const byName = (objects: Manifest[], kind: string, name: string): Manifest => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found;
};
const config = byName(base, "ConfigMap", "operon-config").data as Record<string, string>;

/** A container's environment as the pod gets it: the ConfigMap, then its own env (values only; secrets by name). */
function podEnvironment(container: Manifest): { values: Record<string, string>; secrets: string[] } {
  const values: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    expect(source.configMapRef.name).toBe("operon-config");
    Object.assign(values, config);
  }
  const secrets: string[] = [];
  for (const variable of container.env ?? []) {
    if (variable.valueFrom !== undefined) secrets.push(variable.name);
    else values[variable.name] = String(variable.value);
  }
  return { values, secrets };
}

/** What `operon serve` parses from this environment (the real flag definitions and parsers). */
async function parseWith(environment: Record<string, string>): Promise<ReturnType<typeof serveFlagsSchema.parse>> {
  for (const [name, value] of Object.entries(environment)) vi.stubEnv(name, value);
  let seen: Record<string, unknown> | undefined;
  await serveCommand()
    .exitOverride()
    .action((flags: Record<string, unknown>) => {
      seen = flags;
    })
    .parseAsync([], { from: "user" });
  return serveFlagsSchema.parse(seen);
}

const serverVariables = new Set(
  serveCommand()
    .options.filter((option) => option.long !== undefined && option.long !== "--help")
    .map((option) => flagEnvironmentVariable(option.long!)),
);

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("deploy/kubernetes against the Kubernetes schemas", () => {
  it("validates every object of every file, and every kustomization's build", () => {
    const files = yamlFiles(KUBERNETES);
    expect(files.length).toBeGreaterThanOrEqual(15);
    let validated = 0;
    for (const file of files) {
      const where = relative(ROOT, file);
      for (const manifest of load(file)) {
        if (manifest.kind === "Kustomization") {
          for (const resource of manifest.resources ?? []) expect(statSync(join(dirname(file), resource))).toBeTruthy();
          for (const patch of manifest.patches ?? []) expect(statSync(join(dirname(file), patch.path))).toBeTruthy();
        } else if (manifest.kind === "ServingRuntime") {
          // No published model for KServe's CRD: its fields by hand, its containers as core/v1 Containers.
          expect(manifest.apiVersion).toBe("serving.kserve.io/v1alpha1");
          expect([["v2"], ["grpc-v2"]]).toContainEqual(manifest.spec.protocolVersions);
          for (const container of manifest.spec.containers) new Container(container).validate();
          validated++;
        } else if (manifest.rules !== undefined) {
          // The Prometheus adapter's rule file (not a Kubernetes object).
          expect(manifest.rules[0].name.as).toBe("operon_queue_time_per_request_us");
        } else if (manifest.externalRules !== undefined) {
          // The adapter's external rule: the gauge the control plane exports, under the name the HPA asks for.
          expect(manifest.externalRules[0].seriesQuery).toContain(`${DESIRED_GATEWAY_REPLICAS_METRIC}{`);
          expect(manifest.externalRules[0].name.as).toBe(DESIRED_GATEWAY_REPLICAS_METRIC);
        } else if (!(where.includes("/variants/") && manifest.kind !== "Kustomization")) {
          validate(manifest, where); // variants' patches are partial objects: validated merged, below
          validated++;
        }
      }
    }
    expect(validated).toBe(12); // the base's 10 objects and the two ServingRuntimes
    for (const variant of ["base", "variants/gpu", "variants/hpa-queue-time", "variants/hpa-desired-replicas"]) {
      for (const manifest of build(join(KUBERNETES, variant))) validate(manifest, variant);
    }
  });

  it("catches a broken manifest (the check can fail)", () => {
    const broken = mergePatch(byName(base, "Deployment", "operon-gateway"), {
      spec: {
        template: { spec: { containers: [{ name: "operon", ports: [{ name: "http", containerPort: "8000" }] }] } },
      },
    });
    expect(() => validate(broken, "broken")).toThrow(/containerPort must be integer/);
    expect(() => validate({ apiVersion: "v1", kind: "Pod" }, "pod")).toThrow(/no schema/);
  });

  it("the GPU variant requests nvidia.com/gpu; the queue-time variant scales on the adapter's metric", () => {
    const gpu = byName(build(join(KUBERNETES, "variants/gpu")), "Deployment", "operon-gateway");
    const container = gpu.spec.template.spec.containers[0];
    expect(container.resources.limits["nvidia.com/gpu"]).toBe("1");
    // The patch kept the base's probes and ports (merged by name, not replaced).
    expect(container.readinessProbe.httpGet.path).toBe("/v2/health/ready");
    const hpa = byName(build(join(KUBERNETES, "variants/hpa-queue-time")), "HorizontalPodAutoscaler", "operon-gateway");
    expect(hpa.spec.metrics).toEqual([
      expect.objectContaining({
        type: "Pods",
        pods: expect.objectContaining({ metric: { name: "operon_queue_time_per_request_us" } }),
      }),
    ]);
  });

  it("the desired-replicas variant follows the scheduler's gauge as it is (External metric, average value 1)", () => {
    const objects = build(join(KUBERNETES, "variants/hpa-desired-replicas"));
    const hpa = byName(objects, "HorizontalPodAutoscaler", "operon-gateway");
    expect(hpa.spec.metrics).toEqual([
      {
        type: "External",
        external: {
          metric: { name: DESIRED_GATEWAY_REPLICAS_METRIC },
          target: { type: "AverageValue", averageValue: "1" },
        },
      },
    ]);
    // It still scales the gateways, within the base's bounds.
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: "Deployment", name: "operon-gateway" });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
    // The control plane exports the gauge on its metrics port, which the ServiceMonitor scrapes (its Service names it).
    const service = byName(objects, "Service", "operon-control-plane");
    expect(service.spec.ports.map((port: Manifest) => port.name)).toContain("metrics");
    const monitor = byName(objects, "ServiceMonitor", "operon");
    expect(monitor.spec.endpoints).toContainEqual(expect.objectContaining({ port: "metrics", path: "/metrics" }));
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
  });
});

describe("deploy/kubernetes against what the server reads and serves", () => {
  const deployments = base.filter((o) => o.kind === "Deployment");

  it("names only variables the server reads, with values its parsers accept", async () => {
    for (const name of Object.keys(config)) expect(serverVariables, `ConfigMap key ${name}`).toContain(name);
    for (const deployment of deployments) {
      const container = deployment.spec.template.spec.containers[0];
      const { values, secrets } = podEnvironment(container);
      for (const name of [...Object.keys(values), ...secrets]) expect(serverVariables, name).toContain(name);
      const flags = await parseWith(values);
      const ports = Object.fromEntries(
        (container.ports as Manifest[]).map((port) => [port.name, port.containerPort as number]),
      );
      expect(ports.http).toBe(flags.httpPort);
      expect(ports.grpc).toBe(flags.grpcPort);
      expect(ports.metrics).toBe(flags.metricsPort);
      if (ports.console !== undefined) expect(ports.console).toBe(flags.consolePort);
      expect(flags.httpAddress).toBe("0.0.0.0");
      // The drain fits: the preStop sleep, then --exit-timeout-secs, inside the grace period.
      const preStop = container.lifecycle.preStop.exec.command;
      expect(preStop[0]).toBe("sleep");
      expect(Number(preStop[1]) + flags.exitTimeoutSecs).toBeLessThan(
        deployment.spec.template.spec.terminationGracePeriodSeconds,
      );
      expect(container.livenessProbe.httpGet).toEqual({ path: "/v2/health/live", port: "http" });
      expect(container.readinessProbe.httpGet).toEqual({ path: "/v2/health/ready", port: "http" });
      const mounts = (container.volumeMounts as Manifest[]).map((mount) => mount.mountPath);
      expect(mounts).toContain(flags.modelRepository[0]);
      expect(mounts).toContain(flags.dataDir);
    }
    const controlPlane = byName(base, "Deployment", "operon-control-plane").spec.template.spec.containers[0];
    expect(podEnvironment(controlPlane).secrets).toEqual(["OPERON_DATABASE_URL"]);
    expect((await parseWith(podEnvironment(controlPlane).values)).trustedProxy).toContain("10.0.0.0/8");
  });

  it("runs one control plane and N gateways on the Secret's PostgreSQL", async () => {
    const gateway = byName(base, "Deployment", "operon-gateway").spec.template.spec.containers[0];
    const controlPlane = byName(base, "Deployment", "operon-control-plane").spec.template.spec.containers[0];
    const gatewayFlags = await parseWith(podEnvironment(gateway).values);
    expect(gatewayFlags.role).toBe("gateway");
    expect(podEnvironment(gateway).secrets).toEqual(["OPERON_DATABASE_URL"]);
    vi.unstubAllEnvs();
    const controlPlaneFlags = await parseWith(podEnvironment(controlPlane).values);
    expect(controlPlaneFlags.role).toBe("control-plane");
    // The console loads uploads through its gateway's load API: explicit mode (poll mode refuses loads);
    // gateways register the console's operators, which poll mode refuses too.
    for (const flags of [gatewayFlags, controlPlaneFlags]) {
      expect(flags.modelControlMode).toBe("explicit");
      expect(flags.loadModel).toEqual(["*"]);
    }
  });

  it("stores console uploads on the volume the gateways serve", async () => {
    const volumeAt = (deployment: Manifest, path: string): Manifest | undefined => {
      const container = deployment.spec.template.spec.containers[0];
      const mount = (container.volumeMounts as Manifest[])
        .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
        .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      return deployment.spec.template.spec.volumes.find((v: Manifest) => v.name === mount?.name);
    };
    const controlPlane = byName(base, "Deployment", "operon-control-plane");
    const flags = await parseWith(podEnvironment(controlPlane.spec.template.spec.containers[0]).values);
    // Where the control plane writes uploads (--model-store, else <data-dir>/models: control-plane-setup.ts).
    const store = flags.modelStore ?? join(flags.dataDir, "models");
    const storeVolume = volumeAt(controlPlane, store);
    expect(storeVolume?.persistentVolumeClaim?.claimName, `the model store ${store}`).toBe("operon-model-store");
    const gateway = byName(base, "Deployment", "operon-gateway");
    vi.unstubAllEnvs();
    const gatewayFlags = await parseWith(podEnvironment(gateway.spec.template.spec.containers[0]).values);
    for (const repository of gatewayFlags.modelRepository)
      expect(volumeAt(gateway, repository)?.persistentVolumeClaim?.claimName).toBe("operon-model-store");
    // And the gateways see it at the same path, so a model's folder name is the same everywhere.
    expect(gatewayFlags.modelRepository).toContain(store);
  });

  it("keeps the control plane's data dir (staged uploads, batch files) on a volume that outlives the pod", async () => {
    const controlPlane = byName(base, "Deployment", "operon-control-plane");
    const container = controlPlane.spec.template.spec.containers[0];
    const flags = await parseWith(podEnvironment(container).values);
    const mount = (container.volumeMounts as Manifest[]).find((m) => m.mountPath === flags.dataDir);
    const volume = controlPlane.spec.template.spec.volumes.find((v: Manifest) => v.name === mount?.name);
    expect(volume?.persistentVolumeClaim?.claimName, `the data dir ${flags.dataDir}`).toBe("operon-control-plane-data");
    expect(byName(base, "PersistentVolumeClaim", "operon-control-plane-data").spec.accessModes).toEqual([
      "ReadWriteOnce",
    ]);
  });

  it("declares KServe's ports: HTTP 8080 and gRPC 9000 (h2c), each the server's own", () => {
    const runtimes = load(join(KUBERNETES, "kserve/serving-runtime.yaml"));
    const declared = runtimes.map((runtime) => {
      const container = runtime.spec.containers[0];
      const flag = (name: string): number =>
        Number(/=(\d+)$/.exec(container.args.find((a: string) => a.startsWith(name)))![1]);
      return {
        protocols: runtime.spec.protocolVersions,
        ports: container.ports,
        http: flag("--http-port="),
        grpc: flag("--grpc-port="),
      };
    });
    expect(declared.map((d) => d.protocols)).toEqual([["v2"], ["grpc-v2"]]);
    for (const d of declared) expect([d.http, d.grpc]).toEqual([8080, 9000]);
    expect(declared[0]!.ports).toEqual([{ containerPort: 8080, name: "http1", protocol: "TCP" }]);
    expect(declared[1]!.ports).toEqual([{ containerPort: 9000, name: "h2c", protocol: "TCP" }]);
  });

  it("points Services and the ServiceMonitor at ports the pods declare", () => {
    for (const service of base.filter((o) => o.kind === "Service")) {
      const pods = deployments.filter((d) =>
        Object.entries(service.spec.selector).every(([key, value]) => d.spec.template.metadata.labels[key] === value),
      );
      expect(pods, service.metadata.name).toHaveLength(1);
      const named = pods[0]!.spec.template.spec.containers[0].ports.map((port: Manifest) => port.name);
      for (const port of service.spec.ports) expect(named).toContain(port.targetPort);
    }
    const monitor = byName(base, "ServiceMonitor", "operon");
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: "metrics", path: "/metrics" });
  });

  describe("real servers started with each pod's args and environment", () => {
    const servers: ChildProcess[] = [];
    let database: { url: string; drop(): Promise<void> } | undefined;
    afterAll(async () => {
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolveExit) => {
              if (server.exitCode !== null || server.signalCode !== null) return resolveExit();
              server.once("exit", () => resolveExit());
              server.kill("SIGTERM");
            }),
        ),
      );
      await database?.drop();
    });

    /**
     * Starts the built CLI with exactly the container's args and environment, but for ports (0: free
     * ports, Triton's may be taken here), absolute paths (moved under a fresh folder, as this machine has
     * no /models) and the Secret (a fresh PostgreSQL database). Addresses stay as they are (0.0.0.0).
     */
    async function startPod(container: Manifest): Promise<{ httpUrl: string; metricsUrl: string; output(): string }> {
      const root = mkdtempSync(join(tmpdir(), "operon-deploy-pod-"));
      const moved = (value: string): string => {
        if (!value.startsWith("/")) return value;
        mkdirSync(join(root, value), { recursive: true });
        return join(root, value);
      };
      const { values, secrets } = podEnvironment(container);
      // Every port the server may open, free ones: those the manifest sets and those it leaves at their default.
      const environment: Record<string, string> = Object.fromEntries(
        ["HTTP", "GRPC", "METRICS", "CONSOLE", "API"].map((port) => [`OPERON_${port}_PORT`, "0"]),
      );
      for (const [name, value] of Object.entries(values))
        environment[name] = name.endsWith("_PORT") ? "0" : moved(value);
      for (const name of secrets) {
        expect(name).toBe("OPERON_DATABASE_URL");
        database ??= await createTestPostgresDatabase({ migrated: true });
        environment[name] = database.url;
      }
      const args = (container.args as string[]).map((arg) => {
        const [flag, value] = arg.split("=", 2) as [string, string | undefined];
        if (value === undefined) return arg;
        return `${flag}=${/-port$/.test(flag) ? "0" : moved(value)}`;
      });
      const server = spawn(process.execPath, [CLI, ...args], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), ...environment },
        stdio: ["ignore", "pipe", "pipe"],
      });
      servers.push(server);
      let output = "";
      const banner = await new Promise<RegExpExecArray>((resolveBanner, rejectBanner) => {
        const pattern = /HTTP on (http:\/\/\S+), gRPC on \S+, metrics on (http:\/\/\S+\/metrics)/;
        const onData = (chunk: Buffer): void => {
          output += chunk.toString();
          const match = pattern.exec(output);
          if (match !== null) resolveBanner(match);
        };
        server.stdout!.on("data", onData);
        server.stderr!.on("data", onData);
        server.once("exit", () => rejectBanner(new Error(`server exited:\n${output}`)));
      });
      const httpUrl = banner[1]!.replace(/,$/, "");
      // The server took its ports from the variables (0 = free ports), not its defaults, and kept the address.
      expect(new URL(httpUrl).port).not.toBe(String(flagsDefaultHttpPort));
      expect(new URL(httpUrl).hostname).toBe(values.OPERON_HTTP_ADDRESS ?? "127.0.0.1");
      return { httpUrl, metricsUrl: banner[2]!, output: () => output };
    }

    async function answersProbes(container: Manifest, httpUrl: string): Promise<void> {
      for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
        if (probe?.httpGet === undefined) continue;
        const response = await fetch(`${httpUrl}${probe.httpGet.path}`);
        expect(response.status, probe.httpGet.path).toBe(200);
      }
    }

    it("starts the control plane, then a gateway, and both answer the probes' and the ServiceMonitor's paths", async () => {
      const controlPlane = byName(base, "Deployment", "operon-control-plane").spec.template.spec.containers[0];
      const started = await startPod(controlPlane);
      await answersProbes(controlPlane, started.httpUrl);
      const gateway = byName(base, "Deployment", "operon-gateway").spec.template.spec.containers[0];
      const pod = await startPod(gateway);
      await answersProbes(gateway, pod.httpUrl);
      // The gateway read the control plane's keys from the database (none yet, but the table was there).
      expect(pod.output()).toMatch(/API keys, models and operators follow the database/);
      expect(pod.output()).not.toMatch(/cannot read the/);
      const monitor = byName(base, "ServiceMonitor", "operon").spec.endpoints[0];
      const metrics = await fetch(pod.metricsUrl.replace(/\/metrics$/, monitor.path));
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain("nv_");
    }, 120_000);

    it("starts each KServe ServingRuntime's container", async () => {
      for (const runtime of load(join(KUBERNETES, "kserve/serving-runtime.yaml"))) {
        const container = runtime.spec.containers[0];
        const pod = await startPod(container);
        await answersProbes(container, pod.httpUrl);
      }
    }, 60_000);
  });
});
