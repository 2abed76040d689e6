/**
 * The priority an automatic perf run measures at (issue 27 item 3): the
 * model's lowest level where its config has priority levels (Triton's
 * dynamic_batching.priority_levels; level 1 is the highest, so the lowest is
 * the count), so users' requests are served ahead of the run's. Undefined
 * for a model without levels: the gateway ignores a priority there (as
 * Triton does), and the headroom gate alone keeps the run out of the way.
 */
export function lowestPriorityOf(config: Record<string, unknown>): number | undefined {
  const batching = config["dynamic_batching"];
  if (batching === null || typeof batching !== "object") return undefined;
  const raw = (batching as Record<string, unknown>)["priority_levels"];
  const levels = typeof raw === "string" ? Number(raw) : raw;
  return typeof levels === "number" && Number.isSafeInteger(levels) && levels > 0 ? levels : undefined;
}
