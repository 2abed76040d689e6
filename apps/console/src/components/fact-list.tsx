import type { ReactNode } from "react";
import { BreakableText } from "./breakable-text";

/** Facts at a glance: a term and its value per entry, laid out as tiles. */
export function FactList({ facts }: { facts: ReadonlyArray<readonly [string, ReactNode]> }) {
  return (
    <dl className="facts">
      {facts.map(([term, value]) => (
        <div key={term} className="fact">
          <dt>{term}</dt>
          <dd>{typeof value === "string" ? <BreakableText text={value} /> : value}</dd>
        </div>
      ))}
    </dl>
  );
}
