/**
 * The palette's "Add to spec": a model step (a model, a built-in step model
 * or a custom step: operators call all three the same way) appended to the
 * spec, each of its inputs and outputs mapped to the tensor of the same name,
 * for the engineer to rewire. Its id is the model's name, or the name with
 * _2, _3… when a step already has it. The gateway then checks every
 * connection as usual, and a mismatch shows on its edge.
 */
export interface PaletteEntry {
  name: string;
  inputs: readonly string[];
  outputs: readonly string[];
}

export function appendModelStep(spec: Record<string, unknown>, entry: PaletteEntry): Record<string, unknown> {
  const steps = Array.isArray(spec["steps"]) ? spec["steps"] : [];
  const taken = new Set(
    steps.flatMap((step) =>
      typeof step === "object" && step !== null && typeof (step as { id?: unknown }).id === "string"
        ? [(step as { id: string }).id]
        : [],
    ),
  );
  let id = entry.name;
  for (let n = 2; taken.has(id); n += 1) id = `${entry.name}_${n}`;
  const same = (names: readonly string[]) => Object.fromEntries(names.map((name) => [name, name]));
  return {
    ...spec,
    steps: [
      ...steps,
      { id, kind: "model", model: entry.name, inputs: same(entry.inputs), outputs: same(entry.outputs) },
    ],
  };
}

/** Which group of the palette a model belongs to, from its backend and platform. */
export type PaletteGroup = "step" | "custom" | "model";

export function paletteGroup(model: { backend?: string | null; platform?: string | null }): PaletteGroup {
  if (model.backend === "operon_steps" || model.platform === "operon_steps") return "step";
  if (model.platform === "custom_step") return "custom";
  return "model";
}
