"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useId, useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { type PaletteEntry, type PaletteGroup, paletteGroup } from "./palette-step";

const GROUPS: Array<[PaletteGroup, string]> = [
  ["step", "Built-in steps"],
  ["custom", "Custom steps"],
  ["model", "Models"],
];

/**
 * Beside the spec editor, the palette: every step and model an operator can
 * call in one list, grouped (step models built from the step library, custom
 * steps engineers uploaded, and models), each with its input and output
 * tensor names, types and shapes (the names a step's "inputs" and "outputs"
 * map), so nobody types `softmax_0.tmp_0` from memory (issue 27, item 6).
 * "Add to spec" appends the picked one as a step (issue 21): the editor then
 * checks its connections with the gateway and marks a mismatch on its edge.
 */
export function ModelTensorLookup({ onAdd }: { onAdd?: ((entry: PaletteEntry) => void) | undefined }) {
  const trpc = useTRPC();
  const id = useId();
  const [model, setModel] = useState("");
  const models = useQuery(trpc.models.list.queryOptions());
  const detail = useQuery({ ...trpc.models.get.queryOptions({ name: model }), enabled: model !== "" });
  const callable = (models.data?.models ?? []).filter((entry) => entry.source !== "operator");
  return (
    <section className="tensor-lookup" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Steps and models</h3>
      <p className="muted small">
        Built-in steps are made into step models under <Link href="/models/steps">Build from steps</Link>; custom steps
        are uploaded code.
      </p>
      <div className="field">
        <label htmlFor={`${id}-model`}>Step or model</label>
        <select id={`${id}-model`} value={model} onChange={(event) => setModel(event.target.value)}>
          <option value="">Pick a step or model…</option>
          {GROUPS.map(([group, label]) => {
            const names = callable.filter((entry) => paletteGroup(entry) === group).map((entry) => entry.name);
            return names.length === 0 ? null : (
              <optgroup key={group} label={label}>
                {names.map((name) => (
                  <option key={name} value={name}>
                    {name}
                  </option>
                ))}
              </optgroup>
            );
          })}
        </select>
      </div>
      {model === "" ? null : detail.isPending ? (
        <p className="muted small">Loading {model}…</p>
      ) : detail.isError ? (
        <p className="field-error">{detail.error.message}</p>
      ) : (
        <>
          <dl className="tensor-lookup-list">
            {(["inputs", "outputs"] as const).map((side) => (
              <div key={side}>
                <dt>{side === "inputs" ? "Inputs" : "Outputs"}</dt>
                {detail.data[side].length === 0 ? (
                  <dd className="muted">none known (load the model)</dd>
                ) : (
                  detail.data[side].map((tensor) => (
                    <dd key={tensor.name}>
                      <code>{tensor.name}</code>{" "}
                      <span className="muted small">
                        {tensor.datatype ?? "?"} [{tensor.shape.join(", ")}]
                      </span>
                    </dd>
                  ))
                )}
              </div>
            ))}
          </dl>
          {onAdd !== undefined ? (
            <button
              type="button"
              className="button"
              onClick={() =>
                onAdd({
                  name: model,
                  inputs: detail.data.inputs.map((tensor) => tensor.name),
                  outputs: detail.data.outputs.map((tensor) => tensor.name),
                })
              }
            >
              Add {model} to the spec
            </button>
          ) : null}
        </>
      )}
    </section>
  );
}
