"use client";

import { useId } from "react";

/** A labelled progress bar with its percentage as text (the bar alone says little to a screen reader user). */
export function UploadProgress({
  label,
  doneBytes,
  totalBytes,
}: {
  label: string;
  doneBytes: number;
  totalBytes: number;
}) {
  const id = useId();
  const percent = totalBytes > 0 ? Math.floor((doneBytes / totalBytes) * 100) : 100;
  return (
    <div className="upload-progress">
      <label htmlFor={id}>{label}</label>
      <div className="upload-progress-row">
        <progress id={id} max={totalBytes || 1} value={totalBytes > 0 ? doneBytes : 1}>
          {percent} %
        </progress>
        <span className="upload-progress-text" aria-hidden="true">
          {percent} %
        </span>
      </div>
    </div>
  );
}
