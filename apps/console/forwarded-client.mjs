// Who sent a request to the console, as server.mjs tells the control plane
// API: the socket's peer, or, when that peer is one of the trusted reverse
// proxies (operon serve --trusted-proxy: addresses, CIDR ranges or
// proxy-addr's names, comma-separated in OPERON_TRUSTED_PROXIES), the nearest
// X-Forwarded-For hop that is not a trusted proxy. proxy-addr does the
// matching (CIDR ranges, IPv4-mapped IPv6 peers), since ingress pods change
// addresses and a list of single addresses cannot follow them.
import proxyaddr from "proxy-addr";

/** The trust function of a comma-separated list ("" trusts nobody). */
export function compileTrustedProxies(list) {
  const entries = (list ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
  return proxyaddr.compile(entries);
}

/** IPv4 addresses as IPv4 also when the socket reports them IPv6-mapped (::ffff:10.0.0.1). */
function normalizeAddress(address) {
  const trimmed = (address ?? "").trim();
  return trimmed.startsWith("::ffff:") && trimmed.includes(".") ? trimmed.slice("::ffff:".length) : trimmed;
}

/** The browser's address: the peer, or through trusted proxies the nearest forwarded hop that is not one of them. */
export function clientAddress(req, trust) {
  if (!req.socket.remoteAddress) return "unknown";
  try {
    return normalizeAddress(proxyaddr(req, trust));
  } catch {
    // A malformed X-Forwarded-For entry from a trusted proxy: believe only the peer.
    return normalizeAddress(req.socket.remoteAddress);
  }
}

/** "https" when a trusted proxy says the browser used TLS (X-Forwarded-Proto, its last value); the API then marks cookies Secure. */
export function browserScheme(req, trust) {
  if (!req.socket.remoteAddress || !trust(req.socket.remoteAddress, 0)) return "http";
  const proto = String(req.headers["x-forwarded-proto"] ?? "")
    .split(",")
    .map((part) => part.trim().toLowerCase())
    .filter(Boolean);
  return proto.at(-1) === "https" ? "https" : "http";
}
