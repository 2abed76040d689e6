import { isIP } from "node:net";

/**
 * True when a listen address only accepts connections from this host:
 * 127.0.0.0/8, ::1 (bracketed or not), an IPv4-mapped 127.x, or
 * "localhost". Anything else (0.0.0.0, ::, a LAN address, another name) may
 * be reachable from elsewhere.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1");
  if (bare === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return bare === "::1" || bare === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(bare);
  return false;
}
