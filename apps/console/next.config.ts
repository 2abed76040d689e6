import type { NextConfig } from "next";

/**
 * The console is a browser UI over the control plane API. Browser calls to
 * /api/* are forwarded to the API server inside `operon serve` by
 * src/proxy.ts at request time (OPERON_API_URL, default http://127.0.0.1:8003),
 * not by `rewrites` here: those are fixed at build time, the API's port is not.
 */
const nextConfig: NextConfig = {
  poweredByHeader: false,
  reactStrictMode: true,
  // The operator spec format is shared code the browser runs (pure TypeScript built to ESM);
  // it imports @operon/protocol's datatypes and errors.
  transpilePackages: ["@operon/operator-spec", "@operon/protocol"],
  experimental: {
    // The proxy buffers request bodies and silently cuts them at this size (default 10 MB).
    // Keep it above the API's own limit (8 MiB: one upload chunk), so that the API, not a
    // truncated body, answers an oversized request (PAYLOAD_TOO_LARGE).
    proxyClientMaxBodySize: "16mb",
  },
};

export default nextConfig;
