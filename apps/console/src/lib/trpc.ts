import { createTRPCContext } from "@trpc/tanstack-react-query";
import type { AppRouter } from "@operon/api";

/** The console's typed access to the control plane API (only the router's type is imported). */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();
