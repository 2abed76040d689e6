import { Worker } from "node:worker_threads";
import type { ModelControlEvent } from "@operon/gateway/server";
import type { ApiKeyGrant } from "@operon/protocol/api-keys";
import type { ControlPlaneThreadOptions, FromControlPlane, ToControlPlane } from "./control-plane-messages.js";
import { PeriodicTask } from "@operon/protocol/periodic-task";

/** How often the gateway's key last-used times go to the control plane. */
const KEY_USAGE_INTERVAL_MS = 5_000;

export interface ControlPlaneDatabaseInfo {
  database: string;
  embedded: boolean;
  appliedMigrations: number;
}

/**
 * The main thread's handle on the control plane's thread. Construction
 * order follows `operon serve`: open() resolves once the database is ready
 * and the stored keys are known (before the gateway takes requests);
 * attachGateway() starts the services and the API once the gateway listens.
 */
export class ControlPlaneThread {
  private readonly worker: Worker;
  private readonly waiters = new Map<FromControlPlane["type"], (message: FromControlPlane) => void>();
  private failure: Error | undefined;
  private exited = false;
  private usageTimer: PeriodicTask | undefined;
  private readonly exit: Promise<void>;
  private replicasListener: ((replicas: number) => void) | undefined;
  /** The last count the thread sent, for a listener set after it came. */
  private lastReplicas: number | undefined;

  private constructor(
    options: ControlPlaneThreadOptions,
    private readonly onGrants: (grants: ApiKeyGrant[], everIssued: boolean) => void,
  ) {
    this.worker = new Worker(new URL("./control-plane-thread.js", import.meta.url), { workerData: options });
    this.worker.on("message", (message: FromControlPlane) => this.onMessage(message));
    this.worker.on("error", (error) =>
      this.fail(new Error(`the control plane's thread failed: ${error.message}`, { cause: error })),
    );
    this.exit = new Promise((resolve) =>
      this.worker.once("exit", () => {
        this.exited = true;
        void this.usageTimer?.stop();
        this.fail(new Error("the control plane's thread exited"));
        resolve();
      }),
    );
  }

  /** Starts the thread and waits until its database is open and migrated and the keys are sent (onGrants called). */
  static async open(
    options: ControlPlaneThreadOptions,
    onGrants: (grants: ApiKeyGrant[], everIssued: boolean) => void,
  ): Promise<{ thread: ControlPlaneThread; info: ControlPlaneDatabaseInfo }> {
    const thread = new ControlPlaneThread(options, onGrants);
    try {
      const keys = (await thread.next("keys")) as Extract<FromControlPlane, { type: "keys" }>;
      return {
        thread,
        info: { database: keys.database, embedded: keys.embedded, appliedMigrations: keys.appliedMigrations },
      };
    } catch (error) {
      await thread.stop();
      throw error;
    }
  }

  /**
   * Tells the control plane where the gateway listens and waits for its API;
   * from now on `drainKeyUsage` is asked every few seconds for the keys' last-used times.
   */
  async attachGateway(
    gateway: { httpUrl: string; metricsUrl: string | undefined },
    drainKeyUsage: () => Map<string, number>,
  ): Promise<{ apiUrl: string; proxyToken: string; setupToken: string | undefined }> {
    this.send({ type: "gateway", ...gateway });
    const started = (await this.next("started")) as Extract<FromControlPlane, { type: "started" }>;
    const flush = (): void => {
      const used = drainKeyUsage();
      if (used.size > 0 && !this.exited) this.send({ type: "key-usage", used: [...used] });
    };
    this.usageTimer = new PeriodicTask(flush, {
      intervalMs: KEY_USAGE_INTERVAL_MS,
      onError: (error) => this.fail(new Error("sending key usage to the control plane failed", { cause: error })),
    });
    this.usageTimer.start();
    this.flushUsage = flush;
    return { apiUrl: started.apiUrl, proxyToken: started.proxyToken, setupToken: started.setupToken };
  }

  private flushUsage: () => void = () => undefined;

  /** Hands a gateway-side model control change to the control plane for the audit log. */
  recordModelControl(event: ModelControlEvent): void {
    this.send({ type: "model-control", event });
  }

  /** Stops the API (draining its requests) and the services, closes the database, ends the thread. Idempotent. */
  async stop(timeoutMs = 30_000): Promise<void> {
    if (this.exited) return;
    await this.usageTimer?.stop();
    this.flushUsage();
    this.send({ type: "stop" });
    const timer = setTimeout(() => void this.worker.terminate(), timeoutMs);
    await this.exit;
    clearTimeout(timer);
  }

  /** Called with the resource scheduler's desired gateway replica count, now if one came already. */
  onDesiredGatewayReplicas(listener: (replicas: number) => void): void {
    this.replicasListener = listener;
    if (this.lastReplicas !== undefined) listener(this.lastReplicas);
  }

  private send(message: ToControlPlane): void {
    if (!this.exited) this.worker.postMessage(message);
  }

  private next(type: FromControlPlane["type"]): Promise<FromControlPlane> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiters.set(type, resolve);
      this.waiters.set("failed", (message) =>
        reject(new Error((message as Extract<FromControlPlane, { type: "failed" }>).message)),
      );
    });
  }

  private onMessage(message: FromControlPlane): void {
    if (message.type === "keys") this.onGrants(message.grants, message.everIssued);
    if (message.type === "failed") this.failure = new Error(message.message);
    if (message.type === "desired-gateway-replicas") {
      this.lastReplicas = message.replicas;
      this.replicasListener?.(message.replicas);
    }
    const waiter = this.waiters.get(message.type);
    if (waiter !== undefined) {
      this.waiters.delete(message.type);
      waiter(message);
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const failed = this.waiters.get("failed");
    this.waiters.clear();
    failed?.({ type: "failed", message: error.message });
  }
}
