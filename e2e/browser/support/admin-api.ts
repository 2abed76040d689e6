import type { RunningOperon } from "../../support/operon-process.js";
import { apiSession, type ApiSession } from "../../support/api-client.js";

/**
 * The control plane API beside a console test, to check what the page shows
 * against what the system says (as a client program would, not through the page).
 */
export function apiUrlOf(operon: RunningOperon): string {
  if (operon.apiUrl !== undefined) return operon.apiUrl;
  const match = /Operon API on (\S+)\/api\/trpc/.exec(operon.output());
  if (match === null) throw new Error(`the server printed no API address:\n${operon.output().slice(-2000)}`);
  return match[1]!;
}

/** A signed-in API session (it fetches the CSRF cookie first, as the console does). */
export async function signedInApiSession(
  operon: RunningOperon,
  account: { email: string; password: string },
): Promise<ApiSession> {
  const session = apiSession(apiUrlOf(operon));
  await session.client.auth.session.query();
  await session.client.auth.signIn.mutate(account);
  return session;
}

/** A new API key with the infer scope, for calls to the gateway. */
export async function createInferKey(session: ApiSession, name: string): Promise<string> {
  return (await session.client.apiKeys.create.mutate({ name, scopes: ["infer"] })).key;
}
