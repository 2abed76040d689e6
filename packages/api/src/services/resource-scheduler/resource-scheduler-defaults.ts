/**
 * The resource scheduler's defaults, in a module of their own with no
 * imports: `operon serve` reads them for its flags' help on the gateway's
 * thread, which must not load the control plane (its heap is the gateway's
 * heap: every major GC of the request path walks it). Each field is the
 * default of the ResourceSchedulerOptions field of the same name.
 */
/** The gauge of the desired gateway replica count (the control plane's metrics endpoint; an HPA follows it). */
export const DESIRED_GATEWAY_REPLICAS_METRIC = "operon_desired_gateway_replicas";

export const RESOURCE_SCHEDULER_DEFAULTS = {
  enabledByDefault: true,
  periodSecs: 15,
  headroom: 0.25,
  hysteresis: 0.2,
  scaleDownCooldownSecs: 120,
  idleUnloadSecs: 600,
  defaultCapacityRps: 20,
  p99BudgetMs: 100,
  instanceMemoryBytes: 256 * 1024 * 1024,
  /** Bounds of the desired gateway replica count (gateway-replicas.ts); the HPA's own bounds apply after. */
  minGateways: 1,
  maxGateways: 10,
} as const;
