"use client";

import { useMutation } from "@tanstack/react-query";
import { useTRPC } from "@/lib/trpc";

/** Signs out, then loads the sign-in page afresh so nothing of the session stays in memory. */
export function SignOutButton() {
  const trpc = useTRPC();
  const signOut = useMutation(
    trpc.auth.signOut.mutationOptions({
      onSettled: () => window.location.assign("/sign-in"),
    }),
  );
  return (
    <button type="button" className="button button-quiet" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
      {signOut.isPending ? "Signing out…" : "Sign out"}
    </button>
  );
}
