"use client";

import { useId, type SelectHTMLAttributes } from "react";

export interface SelectOption {
  value: string;
  label: string;
}

/** A labelled select with the error given for it. */
export function SelectField({
  label,
  options,
  error,
  ...select
}: { label: string; options: readonly SelectOption[]; error?: string | undefined; name: string } & Omit<
  SelectHTMLAttributes<HTMLSelectElement>,
  "id" | "children"
>) {
  const id = useId();
  const errorId = error ? `${id}-error` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} aria-invalid={error ? true : undefined} aria-describedby={errorId} {...select}>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      {error ? (
        <p id={errorId} className="field-error">
          {error}
        </p>
      ) : null}
    </div>
  );
}
