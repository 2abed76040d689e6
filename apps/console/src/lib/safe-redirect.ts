/** A `?next=` target that stays on this site (a path, not `//host` or a URL); "/" otherwise. */
export function safeNextPath(next: string | null | undefined): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  return next;
}

/** The sign-in page's address that comes back to `path` afterwards. */
export function signInPath(path: string): string {
  return path === "/" || path.startsWith("/sign-in") ? "/sign-in" : `/sign-in?next=${encodeURIComponent(path)}`;
}
