import { describe, expect, it } from "vitest";
import { checkLocalPeer, peerAddress } from "./local-peer.js";

describe("shared-memory registration from this host only", () => {
  it.each(["127.0.0.1", "::1", "::ffff:127.0.0.1", "127.8.9.10"])("takes %s", (address) => {
    expect(() => checkLocalPeer(address)).not.toThrow();
  });

  it.each(["10.0.0.5", "192.168.1.20", "::ffff:10.1.2.3", "2001:db8::1", undefined])("refuses %s", (address) => {
    expect(() => checkLocalPeer(address)).toThrow(/only be registered by clients on this host/);
  });

  it.each([
    ["127.0.0.1:5000", "127.0.0.1"],
    ["ipv4:127.0.0.1:5000", "127.0.0.1"],
    ["[::1]:5000", "::1"],
    ["ipv6:[::1]:5000", "::1"],
    ["10.0.0.5:41000", "10.0.0.5"],
  ])("reads the address of gRPC peer %s", (peer, address) => {
    expect(peerAddress(peer)).toBe(address);
  });
});
