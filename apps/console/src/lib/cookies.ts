/** The CSRF double-submit cookie the API sets (readable by script) and the header mutations must echo it in. */
export const CSRF_COOKIE = "operon_csrf";
export const CSRF_HEADER = "X-CSRF-Token";

/** One cookie's value from a `document.cookie` string. */
export function readCookie(cookieString: string, name: string): string | undefined {
  for (const part of cookieString.split(";")) {
    const separator = part.indexOf("=");
    if (separator < 0) continue;
    if (part.slice(0, separator).trim() === name) return decodeURIComponent(part.slice(separator + 1).trim());
  }
  return undefined;
}
