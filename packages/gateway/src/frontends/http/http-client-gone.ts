import type { CancelSignal } from "@operon/protocol/inference";
import { Cancellation } from "../../engine/cancellation.js";
import type { RequestContext } from "./http-context.js";
import { ClientClosedError } from "./http-errors.js";

/**
 * Watches for the client going away before the response is complete:
 * `signal` (the request's; given or new) is then aborted with a
 * ClientClosedError and `closed` is true. dispose() stops watching.
 */
export function clientGone({ req, res, life }: RequestContext, cancellation = new Cancellation()): ClientWatch {
  const watch: ClientWatch = {
    signal: cancellation.signal,
    closed: false,
    dispose: () => {
      if (life.onClose === onClose) life.onClose = undefined;
    },
  };
  const onClose = (): void => {
    if (res.writableFinished) return;
    watch.closed = true;
    cancellation.abort(new ClientClosedError());
  };
  // Heard through the request's one close listener (handle), not a listener of its own.
  life.onClose = onClose;
  if (res.destroyed || req.socket.destroyed) onClose();
  return watch;
}

export interface ClientWatch {
  signal: CancelSignal;
  /** True once the client went away. */
  closed: boolean;
  dispose(): void;
}
