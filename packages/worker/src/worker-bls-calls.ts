import { asOperonError, OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { DecodedFrame } from "@operon/protocol/worker-frame-codec";
import type { BlsRequestMessage, BlsResponseMessage } from "@operon/protocol/worker-wire";
import type { BackendLog, BlsCall, BlsOutcome } from "@operon/backend-api/backend";

/** What the calls need of the worker server that carries them. */
export interface BlsCallsHost {
  /** The channel is gone: a call would never be answered. */
  isClosed(): boolean;
  /** Writes the bls-request frame (inputs in shared memory where they fit); throws when it cannot. */
  send(header: BlsRequestMessage, inputs: readonly Tensor[]): void;
  log: BackendLog;
}

/**
 * A model's BLS calls (BackendHost.infer) from inside the worker: each is
 * one bls-request frame to the gateway, answered by the bls-response with
 * the same blsId. Responses are taken as they arrive, never queued behind
 * the execute that awaits them.
 */
export class WorkerBlsCalls {
  /** BLS calls sent to the gateway and not yet answered, by blsId. */
  private readonly pending = new Map<number, (outcome: BlsOutcome) => void>();
  private nextBlsId = 1;

  constructor(private readonly host: BlsCallsHost) {}

  infer(call: BlsCall): Promise<BlsOutcome> {
    if (this.host.isClosed()) {
      return Promise.resolve({
        error: new OperonError("UNAVAILABLE", "BLS is not available: the gateway channel is closed"),
      });
    }
    const blsId = this.nextBlsId++;
    const header: BlsRequestMessage = {
      type: "bls-request",
      blsId,
      model: call.model,
      ...(call.version !== undefined ? { version: call.version } : {}),
      ...(call.outputNames !== undefined && call.outputNames.length > 0 ? { outputNames: call.outputNames } : {}),
      ...(call.parameters !== undefined ? { parameters: call.parameters } : {}),
    };
    return new Promise((resolve) => {
      this.pending.set(blsId, resolve);
      try {
        this.host.send(header, call.inputs);
      } catch (error) {
        this.pending.delete(blsId);
        resolve({ error: asOperonError(error) });
      }
    });
  }

  /** The gateway's bls-response frame. */
  onResponse({ header, tensors, shmOffsets }: DecodedFrame): void {
    const response = header as BlsResponseMessage;
    const resolve = this.pending.get(response.blsId);
    if (resolve === undefined) {
      this.host.log("warn", "ignoring a bls-response for an unknown call", { blsId: response.blsId });
      return;
    }
    this.pending.delete(response.blsId);
    if (!response.ok) {
      resolve({ error: new OperonError(response.kind, response.message) });
      return;
    }
    // BLS outputs travel inline (the model may keep them); copy any that came otherwise, as its space is not ours.
    resolve({
      outputs: tensors.map((tensor, i) =>
        shmOffsets[i] === undefined ? tensor : { ...tensor, data: Buffer.from(tensor.data) },
      ),
    });
  }
}
