/**
 * The console's colour theme: the system's (prefers-color-scheme) unless the
 * person picks light or dark in the header. The choice lives in localStorage
 * and shows as data-theme on <html>, which the stylesheet reads.
 */
export type ThemeChoice = "system" | "light" | "dark";

export const THEME_STORAGE_KEY = "operon-theme";

/** Dispatched on window when the choice changes, so every theme control on the page shows it. */
export const THEME_CHANGE_EVENT = "operon-theme-change";

/**
 * Runs in <head> before the first paint (inline, from the root layout), so a
 * stored choice applies without a flash of the other theme.
 */
export const THEME_BOOT_SCRIPT = `try{var t=localStorage.getItem("${THEME_STORAGE_KEY}");if(t==="light"||t==="dark")document.documentElement.dataset.theme=t}catch(e){}`;

export function readThemeChoice(): ThemeChoice {
  try {
    const stored = window.localStorage.getItem(THEME_STORAGE_KEY);
    return stored === "light" || stored === "dark" ? stored : "system";
  } catch {
    return "system";
  }
}

export function applyThemeChoice(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === "system") delete root.dataset.theme;
  else root.dataset.theme = choice;
  try {
    if (choice === "system") window.localStorage.removeItem(THEME_STORAGE_KEY);
    else window.localStorage.setItem(THEME_STORAGE_KEY, choice);
  } catch {
    // Storage off (private mode, policy): the choice lasts for this page only.
  }
  window.dispatchEvent(new Event(THEME_CHANGE_EVENT));
}
