import { createTRPCClient, httpBatchLink, httpLink, splitLink } from "@trpc/client";
import type { AppRouter } from "@operon/api";
import { CSRF_COOKIE, CSRF_HEADER, readCookie } from "./cookies";
import { unauthenticatedLink } from "./unauthenticated-link";

export const API_TRPC_PATH = "/api/trpc";

/** Procedures the API takes only one per request (they check a password; see the API's UNBATCHABLE_PROCEDURES). */
const SENT_ALONE = new Set(["auth.signIn", "auth.completeSetup", "auth.changePassword"]);
/** The API refuses batches of more than 20 calls. */
const MAX_BATCH_ITEMS = 10;

/** Procedures whose UNAUTHENTICATED answer is shown on the page, not a reason to go to sign-in. */
const UNAUTHENTICATED_IS_AN_ANSWER = ["auth.signIn", "auth.signOut", "auth.completeSetup"];

/**
 * Mutations must echo the operon_csrf cookie in X-CSRF-Token. The API sets the
 * cookie on its first answer to this browser; if a mutation comes first, one
 * cheap request to /api/health fetches it.
 */
async function csrfHeaders(): Promise<Record<string, string>> {
  let token = readCookie(document.cookie, CSRF_COOKIE);
  if (token === undefined) {
    await fetch("/api/health", { credentials: "same-origin" }).catch(() => undefined);
    token = readCookie(document.cookie, CSRF_COOKIE);
  }
  return token === undefined ? {} : { [CSRF_HEADER]: token };
}

/**
 * The browser's tRPC client. Calls are batched, except mutations that ask
 * for their own request with `context: { unbatched: true }` (large bodies such
 * as upload chunks, which would otherwise hold up or overflow a batch).
 */
export function createConsoleTrpcClient(options: { onUnauthenticated: () => void }) {
  const common = { url: API_TRPC_PATH, headers: csrfHeaders };
  return createTRPCClient<AppRouter>({
    links: [
      unauthenticatedLink<AppRouter>(options.onUnauthenticated, UNAUTHENTICATED_IS_AN_ANSWER),
      splitLink({
        condition: (op) => op.context.unbatched === true || SENT_ALONE.has(op.path),
        true: httpLink(common),
        false: httpBatchLink({ ...common, maxItems: MAX_BATCH_ITEMS }),
      }),
    ],
  });
}
