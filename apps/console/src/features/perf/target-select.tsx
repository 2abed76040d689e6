"use client";

import { useId } from "react";
import type { PerfTargetOption } from "./perf-targets";

/** The run's target: models and operators in two groups of one select. */
export function TargetSelect({
  models,
  operators,
  defaultValue,
  error,
}: {
  models: readonly PerfTargetOption[];
  operators: readonly PerfTargetOption[];
  defaultValue?: string;
  error?: string | undefined;
}) {
  const id = useId();
  const errorId = error ? `${id}-error` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>Target</label>
      <select
        id={id}
        name="target"
        defaultValue={defaultValue}
        required
        aria-invalid={error ? true : undefined}
        aria-describedby={errorId}
      >
        <optgroup label="Models">
          {models.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </optgroup>
        {operators.length > 0 ? (
          <optgroup label="Operators">
            {operators.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </optgroup>
        ) : null}
      </select>
      {error ? (
        <p id={errorId} className="field-error">
          {error}
        </p>
      ) : null}
    </div>
  );
}
