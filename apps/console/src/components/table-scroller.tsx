"use client";

import { useEffect, useRef, useState, type ReactNode } from "react";

/**
 * The horizontal scroller around a table. While the table is wider than the
 * scroller (a narrow screen, many columns), the scroller is a named region
 * in the tab order, so a keyboard user can focus it and scroll with the
 * arrow keys and a screen reader announces it (WCAG 2.1.1, axe's
 * scrollable-region-focusable). A table that fits adds no tab stop.
 */
export function TableScroller({ label, children }: { label: string; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const element = ref.current;
    if (element === null) return;
    const measure = () => setScrolls(element.scrollWidth > element.clientWidth);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    // The table grows with its rows, which the scroller's own size does not show.
    const table = element.firstElementChild;
    if (table !== null) observer.observe(table);
    return () => observer.disconnect();
  }, []);
  return (
    <div ref={ref} className="table-wrap" {...(scrolls ? { role: "region", "aria-label": label, tabIndex: 0 } : {})}>
      {children}
    </div>
  );
}
