import { apiSession, type ApiSession } from "./api-client.js";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "./operon-process.js";

/**
 * `operon serve` with the control plane (console off) and a first admin, as
 * the security tests attack it: default flags but for free ports, explicit
 * model control and add_sub loaded.
 */
export const TEST_ADMIN = { email: "admin@example.com", password: "s3cret-admin-pass" };

export async function startControlPlaneServer(
  extraArgs: string[] = [],
  options: { dataDir?: string; timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<RunningOperon> {
  return startOperon(
    [
      "--control-plane",
      "--console=false",
      "--api-port",
      "0",
      "--model-repository",
      EXAMPLE_REPOSITORY,
      "--model-control-mode",
      "explicit",
      "--load-model",
      "add_sub",
      "--admin-email",
      TEST_ADMIN.email,
      ...extraArgs,
    ],
    { ...options, env: { ...options.env, OPERON_ADMIN_PASSWORD: TEST_ADMIN.password } },
  );
}

/** An API session signed in as `who` (the admin by default). */
export async function signedIn(
  server: RunningOperon,
  who: { email: string; password: string } = TEST_ADMIN,
): Promise<ApiSession> {
  const session = apiSession(server.apiUrl!);
  await session.client.auth.session.query();
  await session.client.auth.signIn.mutate(who);
  return session;
}

/** A CSRF cookie/header pair fetched from the API, for hand-made requests. */
export async function csrfPair(apiUrl: string): Promise<{ cookie: string; token: string }> {
  const first = await fetch(`${apiUrl}/api/health`);
  const token = /operon_csrf=([^;]+)/.exec(first.headers.getSetCookie().join("; "))![1]!;
  return { cookie: `operon_csrf=${token}`, token };
}
