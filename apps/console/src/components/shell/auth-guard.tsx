"use client";

import { useQuery } from "@tanstack/react-query";
import { usePathname, useRouter } from "next/navigation";
import { useEffect, type ReactNode } from "react";
import { ErrorState } from "@/components/states/error-state";
import { LoadingState } from "@/components/states/loading-state";
import { signInPath } from "@/lib/safe-redirect";
import { useTRPC } from "@/lib/trpc";
import { SignedInUserProvider } from "./session-context";

/**
 * Renders the console only for a signed-in user: signed out goes to
 * /sign-in (and back here afterwards), a fresh install to /setup.
 * It acts on a fresh answer only, never on a cached "signed out".
 */
export function AuthGuard({ children }: { children: ReactNode }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const session = useQuery({ ...trpc.auth.session.queryOptions(), staleTime: 0 });
  const settled = session.isSuccess && !session.isFetching;
  const user = session.data?.user ?? null;
  const target = settled && !user ? (session.data.needsSetup ? "/setup" : signInPath(pathname)) : null;

  useEffect(() => {
    if (target) router.replace(target);
  }, [router, target]);

  if (session.isError)
    return (
      <ErrorState title="Could not check your session" error={session.error} onRetry={() => void session.refetch()} />
    );
  if (!user) return <LoadingState label={target ? "Redirecting…" : "Checking your session…"} />;
  return <SignedInUserProvider value={user}>{children}</SignedInUserProvider>;
}
