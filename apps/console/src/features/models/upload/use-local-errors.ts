"use client";

import { useCallback, useRef, useState } from "react";

/**
 * Which of a form's fields hold text that does not parse, keyed by field.
 * `reporter(key)` is stable per key, so fields can report from an effect.
 */
export function useLocalErrors() {
  const [errors, setErrors] = useState<Readonly<Record<string, string>>>({});
  const reporters = useRef(new Map<string, (message: string | undefined) => void>());
  const reporter = useCallback((key: string) => {
    let report = reporters.current.get(key);
    if (report === undefined) {
      report = (message) =>
        setErrors((current) => {
          if (current[key] === message) return current;
          const next = { ...current };
          if (message === undefined) delete next[key];
          else next[key] = message;
          return next;
        });
      reporters.current.set(key, report);
    }
    return report;
  }, []);
  return { errors, hasErrors: Object.keys(errors).length > 0, reporter };
}
