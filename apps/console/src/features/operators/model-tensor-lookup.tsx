"use client";

import { useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTRPC } from "@/lib/trpc";

/**
 * Beside the spec editor: pick a model, read its input and output tensor names with their types and shapes (the
 * names a step's "inputs" and "outputs" map), so nobody types `softmax_0.tmp_0` from memory (issue 27, item 6).
 * The editor completes the same names; this makes them visible without knowing the shortcut.
 */
export function ModelTensorLookup() {
  const trpc = useTRPC();
  const id = useId();
  const [model, setModel] = useState("");
  const models = useQuery(trpc.models.list.queryOptions());
  const detail = useQuery({ ...trpc.models.get.queryOptions({ name: model }), enabled: model !== "" });
  const names = (models.data?.models ?? []).filter((entry) => entry.source !== "operator").map((entry) => entry.name);
  return (
    <section className="tensor-lookup" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Models and their tensors</h3>
      <div className="field">
        <label htmlFor={`${id}-model`}>Model</label>
        <select id={`${id}-model`} value={model} onChange={(event) => setModel(event.target.value)}>
          <option value="">Pick a model…</option>
          {names.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </div>
      {model === "" ? null : detail.isPending ? (
        <p className="muted small">Loading {model}…</p>
      ) : detail.isError ? (
        <p className="field-error">{detail.error.message}</p>
      ) : (
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
      )}
    </section>
  );
}
