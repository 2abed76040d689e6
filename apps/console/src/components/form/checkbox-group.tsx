"use client";

import { useId } from "react";

export interface CheckboxOption {
  value: string;
  label: string;
  hint?: string;
}

/** A fieldset of checkboxes sharing one name (read with FormData.getAll). */
export function CheckboxGroup({
  legend,
  name,
  options,
  defaultChecked = [],
  error,
}: {
  legend: string;
  name: string;
  options: readonly CheckboxOption[];
  defaultChecked?: readonly string[];
  error?: string | undefined;
}) {
  const id = useId();
  const errorId = error ? `${id}-error` : undefined;
  return (
    <fieldset className="field checkbox-group" aria-describedby={errorId} aria-invalid={error ? true : undefined}>
      <legend>{legend}</legend>
      {options.map((option) => (
        <label key={option.value} className="checkbox">
          <input
            type="checkbox"
            name={name}
            value={option.value}
            defaultChecked={defaultChecked.includes(option.value)}
          />
          <span>
            {option.label}
            {option.hint ? <span className="field-hint"> — {option.hint}</span> : null}
          </span>
        </label>
      ))}
      {error ? (
        <p id={errorId} className="field-error">
          {error}
        </p>
      ) : null}
    </fieldset>
  );
}
