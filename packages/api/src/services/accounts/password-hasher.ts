import { availableParallelism } from "node:os";
import { hash, verify } from "@node-rs/argon2";

/**
 * Passwords are hashed with Argon2id (memory-hard) from @node-rs/argon2,
 * with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane). The PHC
 * string stores the parameters, so raising them later keeps old hashes
 * verifiable.
 */
export const MIN_PASSWORD_LENGTH = 10;

const ARGON2ID = 2; // @node-rs/argon2's Algorithm.Argon2id (a const enum, so not importable under isolatedModules)

/**
 * At most this many Argon2 computations run at once (each takes ~19 MiB and
 * a core for tens of milliseconds); the rest wait in line. Without a limit,
 * a burst of sign-ins (or one tRPC batch of them) ran every hash in parallel
 * and starved the process of memory and CPU.
 */
export const MAX_CONCURRENT_HASHES = Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2)));

let running = 0;
const waiting: Array<() => void> = [];

async function limited<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT_HASHES) await new Promise<void>((resolve) => waiting.push(resolve));
  else running += 1;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    // The slot passes straight to the next caller, so `running` stays counted.
    if (next !== undefined) next();
    else running -= 1;
  }
}

/** How many hash computations run right now (for tests). */
export function hashesRunning(): number {
  return running;
}

export async function hashPassword(password: string): Promise<string> {
  return limited(() => hash(password, { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 }));
}

/** False for a wrong password or an unreadable hash; never throws for either. */
export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await limited(() => verify(passwordHash, password));
  } catch {
    return false;
  }
}

/**
 * A hash of a random password, verified against when the email is unknown,
 * so that a sign-in for an unknown account takes as long as a wrong password.
 */
let decoyHash: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoyHash ??= hashPassword(`decoy-${Math.random()}-${Date.now()}`);
  return decoyHash;
}
