import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import type { AppRouter } from "@operon/api";

/**
 * A control plane API client for system tests that behaves like the
 * console's browser: it keeps cookies (the httpOnly session, the CSRF token)
 * and echoes the CSRF token on mutations.
 */
export interface ApiSession {
  client: ReturnType<typeof createTRPCClient<AppRouter>>;
  cookies: Map<string, string>;
  /** Turn off the CSRF header to check the server refuses such calls. */
  sendCsrf: boolean;
}

export function apiSession(apiUrl: string): ApiSession {
  const cookies = new Map<string, string>();
  const session: ApiSession = { client: undefined as never, cookies, sendCsrf: true };
  const jarFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    if (cookies.size > 0) headers.set("cookie", [...cookies].map(([name, value]) => `${name}=${value}`).join("; "));
    const csrf = cookies.get("operon_csrf");
    if (session.sendCsrf && csrf) headers.set("x-csrf-token", csrf);
    const response = await fetch(input, { ...init, headers });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === "") cookies.delete(name);
      else cookies.set(name, value);
    }
    return response;
  };
  session.client = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${apiUrl}/api/trpc`, fetch: jarFetch })] });
  return session;
}

/** The API's app error code of a failed call (error.data.appCode). */
export async function apiErrorOf(
  promise: Promise<unknown>,
): Promise<{ appCode: string; message: string; httpStatus: number | undefined }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TRPCClientError) {
      const data = error.data as { appCode?: string; httpStatus?: number } | undefined;
      return { appCode: data?.appCode ?? "unknown", message: error.message, httpStatus: data?.httpStatus };
    }
    throw error;
  }
  throw new Error("expected the API call to fail, and it succeeded");
}
