import { readFileSync } from "node:fs";

/**
 * A secret read from a file (--admin-password-file, --password-file), so
 * that it shows neither in `ps` nor in the shell's history. One trailing
 * newline (what `echo` and editors add) is not part of the secret.
 */
export function readSecretFile(path: string, flag: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(
      `${flag} ${path}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      { cause: error },
    );
  }
  const secret = text.replace(/\r?\n$/, "");
  if (secret === "") throw new Error(`${flag} ${path}: the file is empty`);
  return secret;
}
