// Usage: start `operon serve --load-model add_sub --console=false --admin-email E --admin-password P ...`, then
//   OPERON_ADMIN_EMAIL=E OPERON_ADMIN_PASSWORD=P node bench/control-plane-auth-overhead.mjs http://127.0.0.1:8003 http://127.0.0.1:8000
// Per-request cost of API-key checks: the same add_sub JSON inference with and without a key, interleaved rounds, c=8.
import { createTRPCClient, httpLink } from "@trpc/client";
const [api, gw] = process.argv.slice(2);
const cookies = new Map();
const jar = async (input, init) => {
  const headers = new Headers(init?.headers);
  if (cookies.size) headers.set("cookie", [...cookies].map(([k, v]) => `${k}=${v}`).join("; "));
  if (cookies.get("operon_csrf")) headers.set("x-csrf-token", cookies.get("operon_csrf"));
  const res = await fetch(input, { ...init, headers });
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const i = pair.indexOf("=");
    cookies.set(pair.slice(0, i), pair.slice(i + 1));
  }
  return res;
};
const client = createTRPCClient({ links: [httpLink({ url: `${api}/api/trpc`, fetch: jar })] });
await client.auth.session.query();
await client.auth.signIn.mutate({
  email: process.env.OPERON_ADMIN_EMAIL ?? "admin@example.com",
  password: process.env.OPERON_ADMIN_PASSWORD ?? "",
});
const { key } = await client.apiKeys.create.mutate({ name: "bench", scopes: ["infer"] });
const body = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});
async function run(n, withKey) {
  const headers = { "content-type": "application/json", ...(withKey ? { authorization: `Bearer ${key}` } : {}) };
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next++ < n) {
        const r = await fetch(`${gw}/v2/models/add_sub/infer`, { method: "POST", headers, body });
        if (r.status !== 200) throw new Error(String(r.status));
        await r.arrayBuffer();
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}
await run(500, false);
await run(500, true);
const ratios = [];
for (let round = 0; round < 5; round++) {
  const without = await run(3000, false);
  const withKey = await run(3000, true);
  ratios.push(withKey / without);
  console.log(
    `round ${round}: without key ${without.toFixed(0)} req/s, with key ${withKey.toFixed(0)} req/s, ratio ${(withKey / without).toFixed(3)}`,
  );
}
ratios.sort();
console.log(
  `ratio with/without: median ${ratios[2].toFixed(3)}, min ${ratios[0].toFixed(3)}, max ${ratios[4].toFixed(3)}`,
);
