import type { ReactNode } from "react";

/** Pages reachable signed out (sign-in, first-run setup): one centred card. */
export default function PublicLayout({ children }: { children: ReactNode }) {
  return (
    <main className="public-page" id="main">
      <p className="brand brand-large">Operon</p>
      <div className="card public-card">{children}</div>
    </main>
  );
}
