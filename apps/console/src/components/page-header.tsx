import type { ReactNode } from "react";

/** A page's title and what it is for. */
export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="page-header">
      <h1>{title}</h1>
      {children ? <div className="page-lede">{children}</div> : null}
    </div>
  );
}
