import type { Role } from "./api-types";

/** The API's role ladder (packages/api trpc.ts): viewers read, engineers build, admins run the platform. */
export const ROLES: readonly Role[] = ["VIEWER", "ENGINEER", "ADMIN"];

const RANK: Record<Role, number> = { VIEWER: 0, ENGINEER: 1, ADMIN: 2 };

export function hasRole(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}

export function roleLabel(role: Role): string {
  return role.charAt(0) + role.slice(1).toLowerCase();
}
