"use client";

import { useId } from "react";

/**
 * The search box above a DataTable: filters as the user types. The match is a case-insensitive substring of
 * any of a row's texts, so "onnx" finds both the backend and the platform.
 */
export function TableSearch({
  label,
  value,
  onChange,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
}) {
  const id = useId();
  return (
    <div className="table-search">
      <label htmlFor={id} className="visually-hidden">
        {label}
      </label>
      <input
        id={id}
        type="search"
        placeholder={`${label}…`}
        value={value}
        // A name or a backend is short; a pasted essay is cut rather than matched against every row.
        maxLength={200}
        onChange={(event) => onChange(event.target.value)}
      />
    </div>
  );
}

export function matchesSearch(search: string, texts: ReadonlyArray<string | null | undefined>): boolean {
  const needle = search.trim().toLocaleLowerCase();
  if (needle === "") return true;
  return texts.some((text) => text?.toLocaleLowerCase().includes(needle) ?? false);
}
