"use client";

import { useEffect, useId, useState } from "react";
import type { ConfigDraft } from "./config-draft";

function stringify(draft: ConfigDraft): string {
  return JSON.stringify(draft, null, 2);
}

function parseConfig(text: string): { ok: true; value: ConfigDraft } | { ok: false; message: string } {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value))
      return { ok: false, message: "the config must be a JSON object ({ … })" };
    return { ok: true, value: value as ConfigDraft };
  } catch (error) {
    return { ok: false, message: `not valid JSON: ${(error as Error).message}` };
  }
}

/**
 * The whole config as JSON text, in step with the form: an edit that parses
 * becomes the config (and the form shows it); one that does not is kept as
 * typed and marked. `errors` are the API's problems no form field shows.
 */
export function JsonConfigField({
  label = "Config (JSON)",
  draft,
  onChange,
  onValidity,
  error,
  rows = 18,
}: {
  label?: string;
  draft: ConfigDraft;
  onChange: (draft: ConfigDraft) => void;
  onValidity: (message: string | undefined) => void;
  error?: string | undefined;
  rows?: number;
}) {
  const id = useId();
  const [synced, setSynced] = useState(draft);
  const [text, setText] = useState(() => stringify(draft));
  const [localError, setLocalError] = useState<string | undefined>();
  if (draft !== synced) {
    // The form changed it: show the new config.
    setSynced(draft);
    setText(stringify(draft));
    setLocalError(undefined);
  }
  useEffect(() => onValidity(localError), [localError, onValidity]);
  useEffect(() => () => onValidity(undefined), [onValidity]);
  const shown = localError ?? error;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        className="code-textarea"
        rows={rows}
        spellCheck={false}
        value={text}
        aria-invalid={shown ? true : undefined}
        aria-describedby={shown ? `${id}-error` : undefined}
        onChange={(event) => {
          setText(event.target.value);
          const parsed = parseConfig(event.target.value);
          if (parsed.ok) {
            setLocalError(undefined);
            setSynced(parsed.value);
            onChange(parsed.value);
          } else {
            setLocalError(parsed.message);
          }
        }}
      />
      {shown ? (
        <p id={`${id}-error`} className="field-error">
          {shown}
        </p>
      ) : null}
    </div>
  );
}
