import { hash, verify } from "@node-rs/argon2";

/**
 * Passwords are hashed with Argon2id (memory-hard) from @node-rs/argon2,
 * with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane). The PHC
 * string stores the parameters, so raising them later keeps old hashes
 * verifiable.
 */
export const MIN_PASSWORD_LENGTH = 10;

const ARGON2ID = 2; // @node-rs/argon2's Algorithm.Argon2id (a const enum, so not importable under isolatedModules)

export async function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 });
}

/** False for a wrong password or an unreadable hash; never throws for either. */
export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
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
