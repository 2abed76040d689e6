"use client";

import { useEffect, useState, type ReactNode } from "react";
import { TextField } from "@/components/form/text-field";
import type { Parsed } from "./parse-values";

/**
 * A text field for a typed value (dims, a number). While the text does not
 * parse, the value keeps its last good state and the field says what is
 * wrong (reported through onValidity, so the form can hold back). When the
 * value changes from elsewhere (the JSON editor), the text follows.
 */
export function ParsedTextField<T>({
  label,
  name,
  value,
  format,
  parse,
  onChange,
  onValidity,
  error,
  hint,
  disabled,
  inputMode,
}: {
  label: string;
  name: string;
  value: T;
  format: (value: T) => string;
  parse: (text: string) => Parsed<T>;
  onChange: (value: T) => void;
  onValidity: (message: string | undefined) => void;
  error?: string | undefined;
  hint?: ReactNode;
  disabled?: boolean;
  inputMode?: "numeric" | "text";
}) {
  const [synced, setSynced] = useState(() => format(value));
  const [text, setText] = useState(synced);
  const [localError, setLocalError] = useState<string | undefined>();
  const formatted = format(value);
  if (formatted !== synced) {
    // Changed from outside: show the new value (adjusting state while rendering, as React documents).
    setSynced(formatted);
    setText(formatted);
    setLocalError(undefined);
  }
  useEffect(() => onValidity(localError), [localError, onValidity]);
  // A field that goes away must not hold the form back.
  useEffect(() => () => onValidity(undefined), [onValidity]);
  return (
    <TextField
      label={label}
      name={name}
      value={text}
      inputMode={inputMode}
      disabled={disabled}
      hint={hint}
      error={localError ?? error}
      autoComplete="off"
      spellCheck={false}
      onChange={(event) => {
        const next = event.target.value;
        setText(next);
        const parsed = parse(next);
        if (parsed.ok) {
          setLocalError(undefined);
          setSynced(format(parsed.value));
          onChange(parsed.value);
        } else {
          setLocalError(parsed.message);
        }
      }}
    />
  );
}
