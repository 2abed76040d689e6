import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@operon/api";

/** What the API sends and takes, as the browser sees it (JSON: dates arrive as ISO strings). */
export type RouterOutputs = inferRouterOutputs<AppRouter>;
export type RouterInputs = inferRouterInputs<AppRouter>;

export type SessionUser = NonNullable<RouterOutputs["auth"]["session"]["user"]>;
export type Role = SessionUser["role"];
