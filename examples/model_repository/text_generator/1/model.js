/**
 * text_generator: a decoupled TypeScript-backend model (see ../config.pbtxt).
 *
 * For each request it streams the words of text_input in reverse order, one
 * response per word (text_output, shape [1]), then "done", then the final
 * flag. max_tokens (optional) caps the words before "done".
 *
 * execute() only starts each request's stream and returns: the worker can
 * take the next requests while these still stream (Triton's decoupled
 * model contract). Everything it needs comes from ctx, so this file imports
 * nothing and runs from any folder.
 */
export default class TextGenerator {
  initialize(args) {
    this.delayMs = Number(args.parameters.token_delay_ms ?? "0") || 0;
    this.log = args.log;
  }

  execute(requests, ctx) {
    for (const request of requests) void this.generate(request, ctx);
  }

  async generate(request, ctx) {
    try {
      const prompt = request.input("text_input").toStrings()[0] ?? "";
      const cap = request.inputs.has("max_tokens") ? request.input("max_tokens").toNumbers()[0] : undefined;
      if (cap !== undefined && cap < 0) throw ctx.error("INVALID_ARG", `max_tokens must be >= 0, got ${cap}`);
      const words = prompt.split(/\s+/).filter((word) => word !== "").reverse().slice(0, cap);
      for (const word of [...words, "done"]) {
        if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
        request.sender.send({ outputs: [ctx.tensor.bytes("text_output", [1], [word])] });
      }
      request.sender.send(undefined, { final: true });
    } catch (error) {
      // A stream that failed still ends with exactly one final response: the error.
      if (!request.sender.finished) request.sender.send(error, { final: true });
    }
  }
}
