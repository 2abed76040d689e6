"use client";

import { useEffect, useId, useState } from "react";
import { applyThemeChoice, readThemeChoice, THEME_CHANGE_EVENT, type ThemeChoice } from "@/lib/theme";

/** Light, dark, or the system's setting; remembered in this browser. */
export function ThemeSelect() {
  const id = useId();
  // "system" on the server and in the first render; the stored choice right after (the boot script already applied it).
  const [choice, setChoice] = useState<ThemeChoice>("system");
  useEffect(() => {
    const show = () => setChoice(readThemeChoice());
    show();
    window.addEventListener(THEME_CHANGE_EVENT, show);
    return () => window.removeEventListener(THEME_CHANGE_EVENT, show);
  }, []);
  return (
    <span className="theme-select">
      <label htmlFor={id} className="visually-hidden">
        Colour theme
      </label>
      <select
        id={id}
        value={choice}
        onChange={(event) => {
          const next = event.target.value as ThemeChoice;
          setChoice(next);
          applyThemeChoice(next);
        }}
      >
        <option value="system">System theme</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </span>
  );
}
