"use client";

import { useEffect, useRef, type FocusEvent, type RefObject } from "react";

/** How many animation frames to wait for a redrawn node to show (React Flow hides a node until it is measured). */
const FRAMES_TO_WAIT = 60;

type Wanted = { node: string; handle: string };

/**
 * Puts the keyboard back on the port it was on when a redraw took that
 * port's element away (operator-graph.tsx keeps the graph's elements across
 * redraws, so this is for a port whose node was drawn anew), rather than
 * let the focus fall to the page's body. Only when the focus was lost with
 * the element: a user who has moved on elsewhere keeps their focus. Returns
 * the focus handlers for the canvas.
 */
export function useRestoredPortFocus(
  canvas: RefObject<HTMLElement | null>,
  signature: string,
): { onFocus: (event: FocusEvent<HTMLElement>) => void; onBlur: (event: FocusEvent<HTMLElement>) => void } {
  const focused = useRef<Wanted | null>(null);

  useEffect(() => {
    const wanted = focused.current;
    const element = canvas.current;
    if (wanted === null || element === null) return;
    let frame = 0;
    let request = 0;
    const restore = () => {
      const active = document.activeElement;
      if (active !== null && active !== document.body) return; // still focused, or the user moved on
      const port = [...element.querySelectorAll<HTMLElement>(".graph-port")].find(
        (candidate) => candidate.dataset["nodeid"] === wanted.node && candidate.dataset["handleid"] === wanted.handle,
      );
      // A node is visibility: hidden until React Flow has measured it, and focus() does nothing there: try again next frame.
      port?.focus();
      if (document.activeElement !== port && frame++ < FRAMES_TO_WAIT) request = requestAnimationFrame(restore);
    };
    request = requestAnimationFrame(restore);
    return () => cancelAnimationFrame(request);
  }, [canvas, signature]);

  return {
    onFocus(event) {
      const { nodeid, handleid } = event.target.dataset;
      focused.current = nodeid !== undefined && handleid !== undefined ? { node: nodeid, handle: handleid } : null;
    },
    onBlur(event) {
      // Focus moved to something else (not lost with a removed element): nothing to restore.
      const next = event.relatedTarget;
      if (next !== null && !event.currentTarget.contains(next)) focused.current = null;
    },
  };
}
