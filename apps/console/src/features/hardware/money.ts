/** A cost in its currency; small amounts keep three significant digits (0.000412 USD), larger ones two decimals. */
export function formatMoney(value: number | null | undefined, currency: string, empty = "—"): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return empty;
  const small = value !== 0 && Math.abs(value) < 1;
  try {
    return new Intl.NumberFormat(undefined, {
      style: "currency",
      currency,
      ...(small ? { maximumSignificantDigits: 3 } : { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
    }).format(value);
  } catch {
    // An ISO code Intl does not know: the number and the code.
    return `${small ? value.toPrecision(3) : value.toFixed(2)} ${currency}`;
  }
}
