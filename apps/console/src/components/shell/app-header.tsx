"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import type { ReactNode } from "react";
import { roleLabel } from "@/lib/roles";
import { useSignedInUser } from "./session-context";
import { SignOutButton } from "./sign-out-button";
import { ThemeSelect } from "./theme-select";

export function AppHeader({ menuButton }: { menuButton: ReactNode }) {
  const user = useSignedInUser();
  const pathname = usePathname();
  return (
    <header className="app-header">
      {menuButton}
      <Link href="/" className="brand">
        Operon
      </Link>
      <div className="header-user">
        <Link
          href="/account"
          className="header-user-name"
          title="Your account: profile and password"
          aria-current={pathname === "/account" ? "page" : undefined}
        >
          <span className="visually-hidden">Signed in as </span>
          {user.name ?? user.email}
        </Link>
        <span className="badge" title="Your role">
          {roleLabel(user.role)}
        </span>
        <ThemeSelect />
        <SignOutButton />
      </div>
    </header>
  );
}
