import type { TRPCLink } from "@trpc/client";
import type { AnyRouter } from "@trpc/server";
import { observable } from "@trpc/server/observable";
import { isUnauthenticated } from "./api-problem";

/**
 * Calls `onUnauthenticated` when the API answers UNAUTHENTICATED (the session
 * expired or was revoked), except for the procedures in `except`, whose
 * UNAUTHENTICATED answer is an ordinary result (a wrong password at sign-in).
 */
export function unauthenticatedLink<TRouter extends AnyRouter>(
  onUnauthenticated: () => void,
  except: readonly string[],
): TRPCLink<TRouter> {
  return () =>
    ({ op, next }) =>
      observable((observer) =>
        next(op).subscribe({
          next: (value) => observer.next(value),
          error: (error) => {
            if (!except.includes(op.path) && isUnauthenticated(error)) onUnauthenticated();
            observer.error(error);
          },
          complete: () => observer.complete(),
        }),
      );
}
