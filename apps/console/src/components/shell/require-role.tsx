"use client";

import type { ReactNode } from "react";
import { EmptyState } from "@/components/states/empty-state";
import type { Role } from "@/lib/api-types";
import { hasRole, roleLabel } from "@/lib/roles";
import { useSignedInUser } from "./session-context";

/** A page section for one role and up; others are told which role it needs (the API checks too). */
export function RequireRole({ role, children }: { role: Role; children: ReactNode }) {
  const user = useSignedInUser();
  if (!hasRole(user.role, role)) {
    return (
      <EmptyState title={`This page needs the ${roleLabel(role).toLowerCase()} role`}>
        <p>You are signed in as {roleLabel(user.role).toLowerCase()}. Ask an admin if you need access.</p>
      </EmptyState>
    );
  }
  return <>{children}</>;
}
