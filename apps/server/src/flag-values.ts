/** Parsing numeric flag values, shared by the server and cluster flags. */

/** `raw` as a whole number in [min, max], or the one-line error to print. */
export function wholeNumber(flag: string, raw: string, min: number, max = Number.MAX_SAFE_INTEGER): number | string {
  const value = Number(raw);
  if (/^\d+$/.test(raw) && value >= min && value <= max) return value;
  const range =
    max !== Number.MAX_SAFE_INTEGER ? `a whole number from ${min} to ${max}` : min === 1 ? 'a positive whole number' : `a whole number of at least ${min}`;
  return `--${flag} must be ${range}, got ${JSON.stringify(raw)}`;
}
