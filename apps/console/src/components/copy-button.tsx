"use client";

import { useState } from "react";

/** Copies text to the clipboard and says so; falls back to selecting it where the Clipboard API is unavailable (plain HTTP). */
export function CopyButton({
  text,
  label = "Copy",
  fallbackTargetId,
}: {
  text: string;
  label?: string;
  fallbackTargetId?: string;
}) {
  const [status, setStatus] = useState<"idle" | "copied" | "select">("idle");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setStatus("copied");
    } catch {
      const target = fallbackTargetId ? document.getElementById(fallbackTargetId) : null;
      if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) target.select();
      setStatus("select");
    }
  };
  return (
    <>
      <button type="button" className="button" onClick={() => void copy()}>
        {label}
      </button>
      <span className="copy-status" role="status" aria-live="polite">
        {status === "copied"
          ? "Copied to the clipboard."
          : status === "select"
            ? "Selected: press Ctrl+C (⌘C) to copy."
            : ""}
      </span>
    </>
  );
}
