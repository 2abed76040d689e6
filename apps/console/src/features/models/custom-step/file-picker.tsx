"use client";

import { useId } from "react";
import { bytesToBase64 } from "../upload/base64";

/** A file picked for a custom step, read as base64 (the API's form) with its size for the hint. */
export interface ChosenFile {
  path: string;
  data: string;
  sizeBytes: number;
}

/** A labelled file input that reads what is picked and lists it (name and size) under the field. */
export function FilePicker({
  label,
  accept,
  multiple = false,
  files,
  onChange,
}: {
  label: string;
  accept?: string;
  multiple?: boolean;
  files: ChosenFile[];
  onChange: (files: ChosenFile[]) => void;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="file"
        multiple={multiple}
        {...(accept !== undefined ? { accept } : {})}
        onChange={async (event) => {
          const chosen = [...(event.target.files ?? [])];
          onChange(
            await Promise.all(
              chosen.map(async (file) => ({
                path: file.name,
                data: bytesToBase64(new Uint8Array(await file.arrayBuffer())),
                sizeBytes: file.size,
              })),
            ),
          );
        }}
      />
      {files.length > 0 ? (
        <p className="field-hint">{files.map((file) => `${file.path} (${file.sizeBytes} bytes)`).join(", ")}</p>
      ) : null}
    </div>
  );
}
