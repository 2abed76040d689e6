/** The API's operator name rule (operators-router.ts): letters, digits, '_', '.', '-', starting with a letter or digit. */
export const OPERATOR_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export function isOperatorName(name: string): boolean {
  return name.length <= 128 && OPERATOR_NAME_PATTERN.test(name);
}
