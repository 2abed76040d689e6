import { NextResponse, type NextRequest } from "next/server";

/**
 * Forwards the browser's /api/* calls to the control plane API inside
 * `operon serve`, so its session and CSRF cookies are same-origin.
 *
 * This is a runtime rewrite on purpose: next.config rewrites are frozen into
 * the build (routes-manifest.json), but the API's address is known only when
 * `operon serve` starts (it may pick a free port), and reaches this server
 * as OPERON_API_URL.
 */
const DEFAULT_API_URL = "http://127.0.0.1:8003";

export function proxy(request: NextRequest) {
  const base = process.env.OPERON_API_URL ?? DEFAULT_API_URL;
  const target = new URL(request.nextUrl.pathname + request.nextUrl.search, base);
  return NextResponse.rewrite(target);
}

export const config = { matcher: "/api/:path*" };
