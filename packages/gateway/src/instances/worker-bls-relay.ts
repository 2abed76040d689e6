import { OperonError, asOperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { BlsRequestMessage, WorkerRequestMessage } from "@operon/protocol/worker-wire";
import type { BlsRequestHandler } from "./backend-instance.js";

/** What the relay needs of the worker handle whose model made the call. */
export interface BlsRelayHost {
  readonly instanceName: string;
  /** The handler now (WorkerProcess.onBlsRequest); undefined = BLS is not available. */
  handler(): BlsRequestHandler | undefined;
  isExited(): boolean;
  /** Writes a frame to the worker; throws when it cannot (e.g. tensors over the frame limit). */
  send(message: WorkerRequestMessage, tensors?: Tensor[]): void;
  log(message: string): void;
}

/**
 * Runs one BLS call of a worker's model (a bls-request frame) through the
 * handler and answers the worker with a bls-response; outputs always travel
 * inline. Never rejects: a failure goes back to the model as its error. The
 * answer is dropped once the worker has exited.
 */
export async function relayBlsRequest(host: BlsRelayHost, header: BlsRequestMessage, inputs: Tensor[]): Promise<void> {
  const { blsId } = header;
  let outputs: Tensor[] | undefined;
  let failure: OperonError | undefined;
  try {
    const handler = host.handler();
    if (handler === undefined)
      throw new OperonError(
        "UNAVAILABLE",
        `BLS is not available: nothing serves model calls from instance '${host.instanceName}'`,
      );
    const result = await handler({
      model: header.model,
      inputs,
      ...(header.version !== undefined ? { version: header.version } : {}),
      ...(header.outputNames !== undefined ? { outputNames: header.outputNames } : {}),
      ...(header.parameters !== undefined ? { parameters: header.parameters } : {}),
    });
    outputs = result.outputs;
  } catch (error) {
    failure = asOperonError(error);
  }
  if (host.isExited()) return;
  try {
    if (outputs !== undefined) {
      host.send({ type: "bls-response", blsId, ok: true }, outputs);
      return;
    }
  } catch (error) {
    // E.g. outputs over the frame limit: the model learns why instead.
    failure = asOperonError(error);
  }
  const { kind, message } = failure ?? new OperonError("INTERNAL", "BLS call failed");
  try {
    host.send({ type: "bls-response", blsId, ok: false, kind, message });
  } catch (error) {
    host.log(`cannot answer a BLS call of the worker: ${asOperonError(error).message}`);
  }
}
