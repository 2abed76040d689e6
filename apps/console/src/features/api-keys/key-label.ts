/** How a key is named without revealing it: its public prefix, as the gateway's logs name it too. */
export function keyLabel(prefix: string): string {
  return `opk_${prefix}…`;
}
