/**
 * Where each instance of a model runs, from its config's instance_group, as
 * Triton places them: a KIND_GPU group with `count: c, gpus: [a, b]` has c
 * instances on GPU a and c on GPU b (count is per GPU); a KIND_GPU group
 * without `gpus` uses every GPU the host has (GPU 0 when it has none, which
 * the load then refuses); KIND_CPU and KIND_MODEL groups have `count`
 * instances with no device. Names are "<group name>_<k>", k counting the
 * group's instances, so every instance of a
 * model has a name of its own (Triton reuses names across GPUs; Operon's
 * workers, metrics and admin API need them unique). k goes round the GPUs
 * (a's first, b's first, a's second, ...), so the names of a smaller count
 * are a prefix of a larger count's, on the same devices.
 */
import type { InstanceKind } from "@operon/protocol/worker-wire";

export interface InstancePlacement {
  name: string;
  /** The group's kind (KIND_AUTO is normalized to KIND_CPU before this). */
  kind: Exclude<InstanceKind, "KIND_AUTO">;
  /** GPU ordinal for KIND_GPU instances; null otherwise. */
  device: number | null;
}

interface GroupView {
  name?: string;
  kind?: string;
  count?: number;
  gpus?: number[];
}

/** Every instance of a model, in order (the first one is the one auto-complete loads). */
export function instancePlacements(model: string, config: Record<string, unknown>, gpuCount = 0): InstancePlacement[] {
  const groups = (config["instance_group"] ?? []) as GroupView[];
  const out: InstancePlacement[] = [];
  for (const [groupIndex, group] of groups.entries()) {
    const groupName = group.name || `${model}_${groupIndex}`;
    const count = group.count ?? 1;
    if (group.kind === "KIND_GPU") {
      const gpus =
        group.gpus !== undefined && group.gpus.length > 0
          ? group.gpus
          : gpuCount > 0
            ? [...Array(gpuCount).keys()]
            : [0];
      // Round by round over the GPUs (as Triton makes instance c on each GPU in turn): a larger count keeps
      // every existing name on its device, so a rescale (ModelInstances.resize) only adds or removes the tail.
      let k = 0;
      for (let i = 0; i < count; i += 1) {
        for (const device of gpus) out.push({ name: `${groupName}_${k++}`, kind: "KIND_GPU", device });
      }
      continue;
    }
    const kind = group.kind === "KIND_MODEL" ? "KIND_MODEL" : "KIND_CPU";
    for (let i = 0; i < count; i += 1) out.push({ name: `${groupName}_${i}`, kind, device: null });
  }
  return out.length > 0 ? out : [{ name: `${model}_0`, kind: "KIND_CPU", device: null }];
}

/** The placement of one named instance; an unknown name (not in the config) runs on the CPU. */
export function placementOf(
  model: string,
  config: Record<string, unknown>,
  instanceName: string,
  gpuCount = 0,
): InstancePlacement {
  return (
    instancePlacements(model, config, gpuCount).find((p) => p.name === instanceName) ?? {
      name: instanceName,
      kind: "KIND_CPU",
      device: null,
    }
  );
}
