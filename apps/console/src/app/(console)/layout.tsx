import type { ReactNode } from "react";
import { AuthGuard } from "@/components/shell/auth-guard";
import { ConsoleShell } from "@/components/shell/console-shell";

/** Every page behind sign-in: the guard, then the header and navigation. */
export default function ConsoleLayout({ children }: { children: ReactNode }) {
  return (
    <AuthGuard>
      <ConsoleShell>{children}</ConsoleShell>
    </AuthGuard>
  );
}
