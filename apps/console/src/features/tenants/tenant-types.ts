import type { RouterOutputs } from "@/lib/api-types";

export type Tenant = RouterOutputs["tenants"]["list"][number];
