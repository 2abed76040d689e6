// The console's HTTP server: Next.js (the built app in .next) behind a
// node:http server that `operon serve` starts (apps/cli/src/console-process.ts).
//
// Why not `next start`: this server is the console's edge. Next.js keeps an
// X-Forwarded-For that the client sent, and the proxy (src/proxy.ts) passes
// it on to the control plane API, whose sign-in rate limit counts per client
// address: a client could name a new address on every attempt. Here the
// forwarding headers a client sent are dropped, X-Forwarded-For is set to
// the address the request really came from, and X-Operon-Proxy-Token to the
// secret `operon serve` shares with the API (OPERON_PROXY_TOKEN), the API's
// proof that the address is this server's word.
//
// Behind a reverse proxy the direct peer is the proxy. OPERON_TRUSTED_PROXIES
// (operon serve --trusted-proxy) lists such proxies, addresses or CIDR ranges:
// for a request from one, the client is the nearest X-Forwarded-For entry that
// is not a trusted proxy (forwarded-client.mjs).
//
// Usage: node server.mjs --port 3000 --hostname 127.0.0.1
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import next from "next";
import { browserScheme, clientAddress, compileTrustedProxies } from "./forwarded-client.mjs";

const FORWARDING_HEADERS = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-port", "x-forwarded-proto", "x-real-ip", "x-operon-proxy-token", "x-operon-forwarded-proto"];
const PROXY_TOKEN = process.env.OPERON_PROXY_TOKEN;
const TRUST_PROXY = compileTrustedProxies(process.env.OPERON_TRUSTED_PROXIES);

const { values } = parseArgs({ options: { port: { type: "string", default: "3000" }, hostname: { type: "string", default: "127.0.0.1" } } });
const port = Number(values.port);
const hostname = values.hostname;

const app = next({ dev: false, dir: import.meta.dirname, hostname, port });
const handle = app.getRequestHandler();
await app.prepare();

const server = createServer((req, res) => {
  const client = clientAddress(req, TRUST_PROXY);
  const scheme = browserScheme(req, TRUST_PROXY);
  for (const name of FORWARDING_HEADERS) delete req.headers[name];
  req.headers["x-forwarded-for"] = client;
  req.headers["x-operon-forwarded-proto"] = scheme;
  if (PROXY_TOKEN) req.headers["x-operon-proxy-token"] = PROXY_TOKEN;
  void handle(req, res);
});
server.listen(port, hostname, () => console.log(`console listening on http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`));
// On a signal: take no new requests, let those in flight (proxied to the API, which `operon serve`
// stops after this process) finish for up to 20 s, then exit.
const DRAIN_MS = 20_000;
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => {
      server.closeAllConnections();
      process.exit(0);
    }, DRAIN_MS).unref();
  });
}
