import { dictionary } from "@zxcvbn-ts/language-common";
import { MIN_PASSWORD_LENGTH } from "./password-hasher.js";

/**
 * What a new password must be, beyond its length: not the account's email
 * or its local part, nor start with them ("admin@example.com" / "admin…"),
 * and not one of the most common passwords. The list is zxcvbn's
 * `passwords-common` (about 49,000 passwords from public breach corpora,
 * most frequent first; npm @zxcvbn-ts/language-common, pinned), compared
 * case-insensitively. Returns why the password is refused, or undefined.
 */
export function passwordProblem(password: string, email?: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `at least ${MIN_PASSWORD_LENGTH} characters`;
  const lower = password.toLowerCase();
  if (email !== undefined && email !== "") {
    const address = email.trim().toLowerCase();
    const local = address.split("@")[0] ?? "";
    if (lower === address || lower.startsWith(address)) return "must not be or start with the account's email";
    // A one- or two-letter local part ("jo@…") would refuse half of all passwords; three letters and up are a name.
    if (local.length >= 3 && lower.startsWith(local)) return `must not be or start with the email's name ('${local}')`;
  }
  if (commonPasswords().has(lower)) return "one of the most common passwords; choose another";
  return undefined;
}

let common: Set<string> | undefined;

/** The list as a set, built on first use (the package decompresses it). */
function commonPasswords(): Set<string> {
  common ??= new Set(dictionary["passwords-common"].map((entry) => entry.toLowerCase()));
  return common;
}
