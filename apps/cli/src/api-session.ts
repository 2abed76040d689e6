/**
 * A signed-in session with the control plane API over plain HTTP, for CLI
 * commands that act as a user (`operon job run`): the session and CSRF
 * cookies kept, tRPC's HTTP form (GET ?input= for queries, POST JSON for
 * mutations), and the API's error message passed on as it is written.
 */
export class ApiSession {
  private readonly cookies = new Map<string, string>();

  private constructor(readonly apiUrl: string) {}

  static async signIn(apiUrl: string, email: string, password: string): Promise<ApiSession> {
    const session = new ApiSession(apiUrl.replace(/\/+$/, ""));
    await session.fetch("/api/health");
    await session.mutate("auth.signIn", { email, password });
    return session;
  }

  async query<T>(procedure: string, input?: unknown): Promise<T> {
    const search = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(input))}`;
    return this.unwrap<T>(await this.fetch(`/api/trpc/${procedure}${search}`));
  }

  async mutate<T>(procedure: string, input: unknown): Promise<T> {
    return this.unwrap<T>(
      await this.fetch(`/api/trpc/${procedure}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": this.cookies.get("operon_csrf") ?? "" },
        body: JSON.stringify(input),
      }),
    );
  }

  /** A GET with the session's cookies (e.g. a results download). */
  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0)
      headers.set("cookie", [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; "));
    let response: Response;
    try {
      response = await fetch(`${this.apiUrl}${path}`, { ...init, headers });
    } catch (error) {
      throw new Error(`the control plane API at ${this.apiUrl} is not reachable (${(error as Error).message})`);
    }
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      if (eq > 0) this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    return response;
  }

  private async unwrap<T>(response: Response): Promise<T> {
    const text = await response.text();
    let body: { result?: { data?: T }; error?: { message?: string } };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new Error(`the API answered ${response.status}: ${text.slice(0, 200)}`);
    }
    if (body.error !== undefined) throw new Error(body.error.message ?? `the API answered ${response.status}`);
    return body.result?.data as T;
  }
}
