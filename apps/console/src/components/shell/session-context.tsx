"use client";

import { createContext, useContext } from "react";
import type { SessionUser } from "@/lib/api-types";

const SignedInUserContext = createContext<SessionUser | null>(null);

export const SignedInUserProvider = SignedInUserContext.Provider;

/** The signed-in user; only inside the auth guard, which renders nothing until there is one. */
export function useSignedInUser(): SessionUser {
  const user = useContext(SignedInUserContext);
  if (!user) throw new Error("useSignedInUser() outside <AuthGuard>");
  return user;
}
