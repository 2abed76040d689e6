"use client";

import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { signInPath } from "@/lib/safe-redirect";
import { TRPCProvider } from "@/lib/trpc";
import { createConsoleTrpcClient } from "@/lib/trpc-client";

/** Sends the browser to sign-in (a full load, so nothing of the old session stays in memory). */
function goToSignIn(): void {
  const here = window.location.pathname + window.location.search;
  if (!window.location.pathname.startsWith("/sign-in")) window.location.assign(signInPath(here));
}

export function Providers({ children }: { children: ReactNode }) {
  const [queryClient] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            staleTime: 5_000,
            retry: (failures, error) => failures < 2 && !isClientError(error),
            refetchOnWindowFocus: false,
          },
          mutations: { retry: false },
        },
      }),
  );
  const [trpcClient] = useState(() => createConsoleTrpcClient({ onUnauthenticated: goToSignIn }));
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}

/** 4xx answers do not get better by asking again. */
function isClientError(error: unknown): boolean {
  const status = (error as { data?: { httpStatus?: unknown } } | null)?.data?.httpStatus;
  return typeof status === "number" && status >= 400 && status < 500;
}
