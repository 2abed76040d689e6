// Not part of `npm run bench`: the add_sub batch sizes Operon forms under wrk (inference count / execution count).
// Usage: node bench/batch-sizes.mjs [connections] [seconds]; INSTANCES (default 2).
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [connections = "16", seconds = "4"] = process.argv.slice(2);
const { repository } = writeAddSubRepository({ instances: Number(process.env.INSTANCES ?? 2) });
const operon = await startOperon(repository);
const stats = async () => {
  const body = await (await fetch(`${operon.httpUrl}/v2/models/add_sub/stats`)).json();
  const s = body.model_stats[0];
  return { inferences: s.inference_count, executions: s.execution_count };
};
const { body, headers } = addSubRequest("json");
const request = wrkRequest(`${operon.httpUrl}/v2/models/add_sub/infer`, body, headers);
const before = await stats();
const result = await runWrk(request, { connections: Number(connections), seconds: Number(seconds) });
const after = await stats();
const inferences = after.inferences - before.inferences;
const executions = after.executions - before.executions;
console.log(
  `c${connections}: ${result.requestsPerSec.toFixed(0)} req/s, ${(inferences / executions).toFixed(2)} requests per execution`,
);
await operon.stop();
