/**
 * bls_scaler: a TypeScript-backend model that calls another model (BLS);
 * see ../config.pbtxt.
 *
 * Each request's INPUT0 is FP32 [N,16]. The model sends add_sub two
 * requests at once, (x, ones) asking for OUTPUT0 = x + 1 and (x, ones)
 * asking for OUTPUT1 = x - 1, and answers OUTPUT = (x + 1) * (x - 1). The
 * requests of one execute run their calls concurrently too, so add_sub's
 * dynamic batcher can join them. ctx.infer never throws: a failed call is
 * a value, and turns into an error for its request only.
 *
 * The import is type-only (erased when the backend transpiles this file).
 */
import type { ExecuteContext, InitializeArgs, TypedRequest, TypedResponse } from "@operon/backend-api/typescript-model-api";

export default class BlsScaler {
  private target = "add_sub";

  initialize(args: InitializeArgs): void {
    this.target = args.parameters.add_sub_model || "add_sub";
  }

  execute(requests: TypedRequest[], ctx: ExecuteContext): Promise<Array<TypedResponse | Error>> {
    return Promise.all(requests.map((request) => this.scale(request, ctx)));
  }

  private async scale(request: TypedRequest, ctx: ExecuteContext): Promise<TypedResponse | Error> {
    const x = request.input("INPUT0");
    const ones = ctx.tensor.float32("INPUT1", x.shape, new Float32Array(x.size).fill(1));
    const [plus, minus] = await Promise.all([
      ctx.infer(this.target, [x, ones], { outputs: ["OUTPUT0"] }),
      ctx.infer(this.target, [x, ones], { outputs: ["OUTPUT1"] }),
    ]);
    for (const result of [plus, minus]) {
      if (result.error !== undefined) return ctx.error(result.error.kind, `bls_scaler: calling '${this.target}' failed: ${result.error.message}`);
    }
    const sum = plus.outputs!.get("OUTPUT0")!.toFloat32Array();
    const diff = minus.outputs!.get("OUTPUT1")!.toFloat32Array();
    const product = sum.map((value, i) => value * diff[i]!);
    return { outputs: [ctx.tensor.fromTypedArray("OUTPUT", x.shape, product)] };
  }
}
