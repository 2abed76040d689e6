import type { SchedulerStatus } from "./scheduler-types";

/**
 * The CPU slot budget as the loaded models use it (issue 27, item 7): how many CPU instances are loaded against the
 * budget, where the budget comes from, and, when the loaded instances already fill it (the example repository
 * loads 14 on a 2-core host whose default budget is 4), that every CPU scale-up is held and what changes that.
 */
export function CpuBudgetNote({ status }: { status: Pick<SchedulerStatus, "budget" | "cpuSlotsFrom" | "models"> }) {
  const loaded = status.models
    .filter((model) => model.kind === "CPU" && !model.parked)
    .reduce((sum, model) => sum + model.instances, 0);
  const slots = status.budget.cpuSlots;
  const source = status.cpuSlotsFrom.flag
    ? "set by --scheduler-cpu-slots"
    : `2 × ${status.cpuSlotsFrom.cores} cores, the default; --scheduler-cpu-slots sets it`;
  return (
    <>
      <p className="muted small">
        CPU instance slots: {loaded} in use of {slots} ({source}).
      </p>
      {loaded >= slots && status.models.length > 0 ? (
        <p className="notice" role="note">
          The models loaded now hold {loaded} CPU instances,{" "}
          {loaded > slots ? `more than the ${slots}` : `all ${slots}`} slots: the instance counts of their configs count
          against the budget too. So the scheduler adds no CPU instance (each scale-up is held) until some go: an idle
          model unloaded, a scale-down, or a larger --scheduler-cpu-slots.
        </p>
      ) : null}
    </>
  );
}
