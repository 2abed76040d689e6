/**
 * Deterministic fuzzing for tests: a seeded PRNG (mulberry32), so a failing
 * case replays, and byte mutations of a valid request (overwrites, inserts,
 * deletions, truncation), biased towards bytes that mean something to JSON
 * and protobuf decoders.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** JSON punctuation, protobuf wire-type keys and varint edges. */
const INTERESTING = [
  0, 1, 0x7f, 0x80, 0xff, 0x22, 0x5b, 0x5d, 0x7b, 0x7d, 0x2c, 0x3a, 0x30, 0x2d, 0x65, 0x08, 0x0a, 0x12, 0x1a, 0x22,
];

/** One to four random mutations of `bytes`, drawn from `next`. */
export function mutateBytes(bytes: Uint8Array, next: () => number): Buffer {
  const out = [...bytes];
  const rounds = 1 + Math.floor(next() * 4);
  for (let round = 0; round < rounds; round += 1) {
    const at = Math.floor(next() * (out.length + 1));
    const pick = next();
    if (pick < 0.35 && out.length > 0)
      out[Math.min(at, out.length - 1)] = INTERESTING[Math.floor(next() * INTERESTING.length)]!;
    else if (pick < 0.55 && out.length > 0) out[Math.min(at, out.length - 1)] = Math.floor(next() * 256);
    else if (pick < 0.7) out.splice(at, 0, INTERESTING[Math.floor(next() * INTERESTING.length)]!);
    else if (pick < 0.85) out.splice(at, 1 + Math.floor(next() * 8));
    else out.length = Math.floor(next() * out.length);
  }
  return Buffer.from(out);
}
