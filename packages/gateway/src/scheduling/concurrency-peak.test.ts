import { describe, expect, it } from "vitest";
import { ConcurrencyPeak } from "./concurrency-peak.js";

const MS = 1_000_000n;

describe("ConcurrencyPeak", () => {
  it("says nothing until enough requests arrived to judge", () => {
    const peak = new ConcurrencyPeak(1000n * MS, 4);
    for (let i = 0; i < 3; i++) peak.noteArrival(1, BigInt(i) * MS);
    expect(peak.allHere(1, 3n * MS)).toBe(false);
    peak.noteArrival(1, 4n * MS);
    expect(peak.allHere(1, 4n * MS)).toBe(true);
  });

  it("is all here only at the most requests the clients kept in flight at once", () => {
    const peak = new ConcurrencyPeak(1000n * MS, 4);
    for (const inFlight of [1, 2, 3, 2, 1]) peak.noteArrival(inFlight, 10n * MS);
    expect(peak.allHere(2, 10n * MS)).toBe(false);
    expect(peak.allHere(3, 10n * MS)).toBe(true);
  });

  it("forgets a burst after one to two windows", () => {
    const peak = new ConcurrencyPeak(1000n * MS, 4);
    for (let i = 0; i < 8; i++) peak.noteArrival(8, 0n);
    // The next window: the burst is the previous window's peak, still remembered.
    for (let i = 0; i < 4; i++) peak.noteArrival(1, 1500n * MS);
    expect(peak.allHere(1, 1500n * MS)).toBe(false);
    // Two windows on, only the steady traffic of the last window counts.
    for (let i = 0; i < 4; i++) peak.noteArrival(1, 2600n * MS);
    expect(peak.allHere(1, 2600n * MS)).toBe(true);
    // After a long quiet spell there is no evidence at all.
    expect(peak.allHere(1, 9000n * MS)).toBe(false);
  });
});
