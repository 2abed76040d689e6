"use client";

import { formatBytes } from "@/lib/number-format";
import { useId, useState, type DragEvent } from "react";

/**
 * A drop target that is also the labelled file input: keyboard and screen
 * reader users reach the input (Tab, then Space/Enter opens the picker);
 * mouse users drop a file on the zone or click it.
 */
export function FileDropZone({
  label,
  accept,
  file,
  onFile,
  error,
  disabled,
}: {
  label: string;
  accept: string;
  file: File | null;
  onFile: (file: File) => void;
  error?: string | undefined;
  disabled?: boolean;
}) {
  const id = useId();
  const [dragging, setDragging] = useState(false);
  const describedBy = [`${id}-status`, error ? `${id}-error` : ""].filter(Boolean).join(" ");
  const onDrop = (event: DragEvent<HTMLDivElement>) => {
    event.preventDefault();
    setDragging(false);
    const dropped = event.dataTransfer.files[0];
    if (dropped && !disabled) onFile(dropped);
  };
  return (
    <div
      className={`drop-zone${dragging ? " drop-zone-active" : ""}${error ? " drop-zone-invalid" : ""}`}
      onDragOver={(event) => {
        event.preventDefault();
        if (!disabled) setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      <input
        id={id}
        type="file"
        accept={accept}
        className="drop-zone-input"
        disabled={disabled}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy}
        onChange={(event) => {
          const chosen = event.target.files?.[0];
          if (chosen) onFile(chosen);
        }}
      />
      <label htmlFor={id} className="drop-zone-label">
        <span className="drop-zone-title">{label}</span>
        <span className="drop-zone-hint">Drop the file here, or click (or press Space) to choose one.</span>
      </label>
      <p id={`${id}-status`} className="drop-zone-status" aria-live="polite">
        {file ? (
          <>
            Selected: <strong>{file.name}</strong> ({formatBytes(file.size)})
          </>
        ) : (
          "No file chosen yet."
        )}
      </p>
      {error ? (
        <p id={`${id}-error`} className="field-error">
          {error}
        </p>
      ) : null}
    </div>
  );
}
