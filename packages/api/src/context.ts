import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parseCookie, stringifySetCookie, type SetCookie } from "cookie";
import type { ApiServices } from "./services.js";
import type { SessionUser } from "./services/accounts/session-store.js";

/** Cookie names: the session (httpOnly) and the CSRF double-submit token (readable by the console's script). */
export const SESSION_COOKIE = "operon_session";
export const CSRF_COOKIE = "operon_csrf";
export const CSRF_HEADER = "x-csrf-token";

export interface CookieWriter {
  set(name: string, value: string, options: Omit<SetCookie, "name" | "value">): void;
  clear(name: string): void;
}

export interface ApiContext {
  services: ApiServices;
  user: SessionUser | null;
  sessionId: string | null;
  ip: string;
  userAgent: string | null;
  /** The request's session cookie value (present or not valid), for sign-out. */
  sessionToken: string | null;
  /**
   * Whether a state-changing call proved it came from the console: the
   * X-CSRF-Token header equals the operon_csrf cookie. Calls made in-process
   * (createCaller, the CLI) have no browser to forge them and pass true.
   */
  csrfVerified: boolean;
  cookies: CookieWriter;
  /**
   * Sets the CSRF cookie for a session that starts now (the token bound to
   * it), or for none (a fresh random one) after sign-out.
   */
  bindCsrf(sessionToken: string | null): void;
}

/** The header by which the console's server passes on the scheme the browser used (https behind a TLS proxy). */
export const FORWARDED_PROTO_HEADER = "x-operon-forwarded-proto";

/**
 * The CSRF token of a session: an HMAC of the session token under a server
 * secret. Script on the console's origin reads it from the operon_csrf cookie
 * and echoes it; another site can neither read it nor compute it, and a token
 * planted in the browser (e.g. through a sibling subdomain's cookie) does not
 * match the session.
 */
export function csrfTokenFor(secret: Buffer, sessionToken: string): string {
  return createHmac("sha256", secret).update(`operon-csrf|${sessionToken}`).digest("base64url");
}

export interface HttpContextOptions {
  /** The console server's proxy token (see clientAddress). */
  proxyToken?: string | undefined;
  /** The key of csrfTokenFor. */
  csrfSecret: Buffer;
}

/** The header by which the console's server proves a request came through it (see clientAddress). */
export const PROXY_TOKEN_HEADER = "x-operon-proxy-token";

/**
 * Builds the context of one HTTP request to the API. With a valid session,
 * mutations must echo csrfTokenFor(session); without one (sign-in, setup),
 * the X-CSRF-Token header must equal the operon_csrf cookie (double submit).
 * The CSRF cookie is kept current: a signed-in caller whose cookie is not its
 * session's token gets the right one in this response.
 */
export async function createHttpContext(
  services: ApiServices,
  req: IncomingMessage,
  res: ServerResponse,
  options: HttpContextOptions,
): Promise<ApiContext> {
  const cookies = parseCookie(req.headers.cookie ?? "");
  const sessionToken = cookies[SESSION_COOKIE] ?? null;
  const active = sessionToken ? await services.sessions.resolve(sessionToken) : null;
  const csrfCookie = cookies[CSRF_COOKIE];
  const csrfHeader = req.headers[CSRF_HEADER];
  const vouched = proxyVouched(req, options.proxyToken);
  const secure = services.options.secureCookies || (vouched && req.headers[FORWARDED_PROTO_HEADER] === "https");
  const writer: CookieWriter = {
    set(name, value, cookieOptions) {
      res.appendHeader("set-cookie", stringifySetCookie({ name, value, path: "/", secure, ...cookieOptions }));
    },
    clear(name) {
      res.appendHeader(
        "set-cookie",
        stringifySetCookie({ name, value: "", path: "/", secure, expires: new Date(0), maxAge: 0 }),
      );
    },
  };
  const setCsrf = (value: string): void => writer.set(CSRF_COOKIE, value, { sameSite: "strict" });
  const expected = active && sessionToken ? csrfTokenFor(options.csrfSecret, sessionToken) : undefined;
  if (expected !== undefined && csrfCookie !== expected) setCsrf(expected);
  else if (expected === undefined && !csrfCookie) setCsrf(randomBytes(24).toString("base64url"));
  const csrfVerified =
    expected !== undefined
      ? tokenEquals(csrfHeader, expected)
      : typeof csrfCookie === "string" && csrfCookie.length >= 16 && csrfHeader === csrfCookie;
  return {
    services,
    user: active?.user ?? null,
    sessionId: active?.sessionId ?? null,
    ip: clientAddress(req, options.proxyToken),
    userAgent: req.headers["user-agent"] ?? null,
    sessionToken,
    csrfVerified,
    cookies: writer,
    bindCsrf(newSessionToken) {
      setCsrf(
        newSessionToken !== null
          ? csrfTokenFor(options.csrfSecret, newSessionToken)
          : randomBytes(24).toString("base64url"),
      );
    },
  };
}

function proxyVouched(req: IncomingMessage, proxyToken: string | undefined): boolean {
  return proxyToken !== undefined && proxyToken !== "" && tokenEquals(req.headers[PROXY_TOKEN_HEADER], proxyToken);
}

/**
 * The client's address, for the sign-in rate limit and the audit log. The
 * console's server (apps/console/server.mjs) forwards browser calls with
 * X-Forwarded-For set to the browser's address and, as proof that the header
 * is its own, the token `operon serve` gave it and this API. Without the
 * token X-Forwarded-For is anyone's to write, so the socket's address counts.
 */
function clientAddress(req: IncomingMessage, proxyToken: string | undefined): string {
  const direct = req.socket.remoteAddress ?? "unknown";
  const forwarded = req.headers["x-forwarded-for"];
  if (proxyVouched(req, proxyToken) && typeof forwarded === "string" && forwarded.length > 0) {
    return forwarded.split(",")[0]!.trim();
  }
  return direct;
}

function tokenEquals(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A context for in-process calls (tests, CLI) acting as `user`. */
export function createInProcessContext(
  services: ApiServices,
  user: SessionUser | null,
  options: { ip?: string } = {},
): ApiContext {
  return {
    services,
    user,
    sessionId: null,
    ip: options.ip ?? "in-process",
    userAgent: null,
    sessionToken: null,
    csrfVerified: true,
    cookies: { set: () => {}, clear: () => {} },
    bindCsrf: () => {},
  };
}
