"use client";

import type { ApiProblem } from "@/lib/api-problem";
import { dynamicBatchingOf, numberOf, withDynamicBatching, withField, type ConfigDraft } from "./config-draft";
import { errorAt } from "./config-field-errors";
import { ParsedTextField } from "./parsed-text-field";
import { formatOptionalNumber, parseWholeNumber } from "./parse-values";

/** max_batch_size and dynamic batching (on/off, max queue delay). */
export function BatchingFields({
  draft,
  problem,
  onChange,
  reporter,
}: {
  draft: ConfigDraft;
  problem: ApiProblem | null;
  onChange: (draft: ConfigDraft) => void;
  reporter: (key: string) => (message: string | undefined) => void;
}) {
  const dynamic = dynamicBatchingOf(draft);
  const dynamicError = errorAt(problem, { path: "dynamic_batching", exact: true });
  return (
    <fieldset className="config-group">
      <legend>Batching</legend>
      <ParsedTextField
        label="Max batch size"
        name="max_batch_size"
        inputMode="numeric"
        value={numberOf(draft, "max_batch_size")}
        format={formatOptionalNumber}
        parse={(text) => parseWholeNumber(text, true)}
        onChange={(value) => onChange(withField(draft, "max_batch_size", value))}
        onValidity={reporter("max_batch_size")}
        hint="0: the model does not batch. Above 0, dims leave out the model's first (batch) dimension."
        error={errorAt(problem, { path: "max_batch_size" })}
      />
      <div className="field">
        <label className="checkbox">
          <input
            type="checkbox"
            name="dynamic_batching"
            checked={dynamic.enabled}
            aria-invalid={dynamicError ? true : undefined}
            onChange={(event) => onChange(withDynamicBatching(draft, { ...dynamic, enabled: event.target.checked }))}
          />
          <span>Dynamic batching</span>
        </label>
        {dynamicError ? <p className="field-error">{dynamicError}</p> : null}
      </div>
      <ParsedTextField
        label="Max queue delay (µs)"
        name="dynamic_batching.max_queue_delay_microseconds"
        inputMode="numeric"
        disabled={!dynamic.enabled}
        value={dynamic.maxQueueDelayUs}
        format={formatOptionalNumber}
        parse={(text) => parseWholeNumber(text, true)}
        onChange={(value) => onChange(withDynamicBatching(draft, { enabled: true, maxQueueDelayUs: value }))}
        onValidity={reporter("dynamic_batching.max_queue_delay_microseconds")}
        hint="How long a request may wait for others to batch with; empty: 0."
        error={errorAt(problem, { path: "dynamic_batching.max_queue_delay_microseconds" })}
      />
    </fieldset>
  );
}
