"use client";

import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import type { ApiProblem } from "@/lib/api-problem";
import { BatchingFields } from "./batching-fields";
import { tensorsOf, withTensor, type ConfigDraft, type TensorKind } from "./config-draft";
import { messageNotShown, type FieldPath } from "./config-field-errors";
import { InstanceFields } from "./instance-fields";
import { JsonConfigField } from "./json-config-field";
import { TensorFieldset } from "./tensor-fieldset";
import type { UploadSignature } from "./use-model-upload";
import { useLocalErrors } from "./use-local-errors";
import { SubmitButton } from "@/components/form/submit-button";
import { useTRPC } from "@/lib/trpc";

const FIXED_FIELDS: FieldPath[] = [
  { path: "max_batch_size" },
  { path: "dynamic_batching", exact: true },
  { path: "dynamic_batching.max_queue_delay_microseconds" },
  { path: "instance_group", exact: true },
  { path: "instance_group[0].count" },
  { path: "instance_group[0].kind" },
];

function tensorFields(draft: ConfigDraft): FieldPath[] {
  return (["input", "output"] as const).flatMap((kind) =>
    tensorsOf(draft, kind).flatMap((_, index) =>
      ["name", "data_type", "dims", "reshape"].map((field) => ({ path: `${kind}[${index}].${field}` })),
    ),
  );
}

/**
 * The uploaded model's config, prefilled with the API's suggestion and the
 * model's own inputs and outputs, edited with fields or as JSON (the two stay
 * in step). The API's objections show at their fields.
 */
export function UploadConfigForm({
  signature,
  problem,
  busy,
  onFinish,
  onCancel,
}: {
  signature: UploadSignature;
  problem: ApiProblem | null;
  busy: boolean;
  onFinish: (config: ConfigDraft, description: string | undefined) => void;
  onCancel: () => void;
}) {
  const [draft, setDraft] = useState<ConfigDraft>(() => signature.suggestedConfig as ConfigDraft);
  const [description, setDescription] = useState("");
  const { hasErrors, reporter } = useLocalErrors();
  // Where the gateway runs ONNX instances by default, so the instance hint says what will really happen.
  const trpc = useTRPC();
  const workers = useQuery(trpc.workers.list.queryOptions());
  const defaultIsolation = workers.data?.defaultIsolation ?? null;
  // Step two appears below the file form once the file has arrived: bring it into view and
  // move focus to it, so neither a sighted nor a screen-reader user misses that it is there.
  const title = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    title.current?.scrollIntoView({ block: "start" });
    title.current?.focus({ preventScroll: true });
  }, []);

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (hasErrors) return;
    onFinish(draft, description.trim() === "" ? undefined : description.trim());
  };

  const tensorGroup = (kind: TensorKind, model: UploadSignature["inputs"]) => {
    const tensors = tensorsOf(draft, kind);
    return (
      <div className="tensor-list" role="group" aria-label={kind === "input" ? "Inputs" : "Outputs"}>
        <h3>{kind === "input" ? "Inputs" : "Outputs"}</h3>
        {tensors.length === 0 ? <p className="muted">None in the config.</p> : null}
        {tensors.map((tensor, index) => (
          <TensorFieldset
            key={`${kind}-${index}`}
            kind={kind}
            index={index}
            tensor={tensor}
            model={model.find((candidate) => candidate.name === tensor.name)}
            problem={problem}
            onChange={(change) => setDraft((current) => withTensor(current, kind, index, change))}
            onValidity={reporter(`${kind}[${index}].dims`)}
          />
        ))}
      </div>
    );
  };

  return (
    <form onSubmit={submit} noValidate className="form upload-config" aria-labelledby="config-title">
      <h2 id="config-title" className="form-title" ref={title} tabIndex={-1}>
        Configure
      </h2>
      {signature.identicalTo !== null ? (
        <p className="notice" role="status">
          This file is identical to version {signature.identicalTo} (same SHA-256): a new version would serve the same
          model.
        </p>
      ) : null}
      <p className="muted">
        {signature.configSource === "current"
          ? "The model's current config, kept for the new version (as Triton keeps config.pbtxt across versions). "
          : "Suggested from the model file. "}
        Names are the model&apos;s own; data types and dims must match it (the API checks).
      </p>
      {signature.configNote !== null ? <p className="notice">Note: {signature.configNote}.</p> : null}
      <div className="config-groups">
        <BatchingFields draft={draft} problem={problem} onChange={setDraft} reporter={reporter} />
        <InstanceFields
          draft={draft}
          problem={problem}
          onChange={setDraft}
          reporter={reporter}
          defaultIsolation={defaultIsolation}
        />
      </div>
      {tensorGroup("input", signature.inputs)}
      {tensorGroup("output", signature.outputs)}
      <TextField
        label="Description (optional)"
        name="description"
        value={description}
        maxLength={2000}
        onChange={(event) => setDescription(event.target.value)}
      />
      <details className="advanced">
        <summary>Advanced: edit JSON</summary>
        <JsonConfigField draft={draft} onChange={setDraft} onValidity={reporter("json")} />
      </details>
      <FormAlert message={messageNotShown(problem, [...FIXED_FIELDS, ...tensorFields(draft)])} />
      {hasErrors ? <p className="field-error">Fix the marked fields first.</p> : null}
      <div className="form-actions">
        <SubmitButton pending={busy} label="Finish upload" pendingLabel="Storing and loading…" disabled={hasErrors} />
        <button type="button" className="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}
