import type { FieldCheck } from "./field-checks";

/** The API's minimum (packages/api password-hasher.ts MIN_PASSWORD_LENGTH); its other rules (common passwords) stay there. */
export const MIN_PASSWORD_LENGTH = 10;

/**
 * A new password typed twice: its length and the confirmation, checked together (field-checks.ts), so a short
 * password that was also mistyped shows both at once. The API never sees the confirmation.
 */
export function newPasswordChecks(
  fields: { password: string; confirmPassword: string },
  paths: { password: string; confirmPassword: string },
  mismatch: string,
): FieldCheck[] {
  return [
    [
      paths.password,
      fields.password === ""
        ? "required"
        : fields.password.length < MIN_PASSWORD_LENGTH && `at least ${MIN_PASSWORD_LENGTH} characters`,
    ],
    [paths.confirmPassword, fields.password !== fields.confirmPassword && mismatch],
  ];
}
