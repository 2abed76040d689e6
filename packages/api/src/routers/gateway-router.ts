import { viewerProcedure, router } from "../trpc.js";

export const gatewayRouter = router({
  /**
   * Where client programs reach the gateway's KServe v2 HTTP API, as the
   * control plane reaches it (loopback unless `operon serve` listens wider):
   * for the console's ready-made client lines.
   */
  endpoints: viewerProcedure.query(({ ctx }) => ({ httpUrl: ctx.services.options.gateway.httpUrl })),
});
