// Usage: start `operon serve --console=false --admin-email E --admin-password P ...`, then
//   OPERON_ADMIN_EMAIL=E OPERON_ADMIN_PASSWORD=P node bench/control-plane-upload-speed.mjs http://127.0.0.1:8003
// Measures chunked upload throughput through the control plane API (tRPC over HTTP, base64 chunks).
import { createHash, randomBytes } from "node:crypto";
import { createTRPCClient, httpLink } from "@trpc/client";
const api = process.argv[2];
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
const size = 32 * 1024 * 1024;
const file = randomBytes(size);
const sha256 = createHash("sha256").update(file).digest("hex");
for (let round = 0; round < 3; round++) {
  const { uploadId, chunkBytes } = await client.models.upload.begin.mutate({
    name: `speed_${round}`,
    fileName: "m.onnx",
    sizeBytes: size,
    sha256,
  });
  const t0 = performance.now();
  for (let offset = 0; offset < size; offset += chunkBytes) {
    await client.models.upload.chunk.mutate({
      uploadId,
      offset,
      data: file.subarray(offset, offset + chunkBytes).toString("base64"),
    });
  }
  const s = (performance.now() - t0) / 1000;
  console.log(`round ${round}: 32 MiB in ${s.toFixed(2)} s = ${(32 / s).toFixed(1)} MiB/s (chunk ${chunkBytes} B)`);
  await client.models.upload.abort.mutate({ uploadId });
}
