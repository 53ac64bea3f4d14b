/**
 * Money in integer micro-units (1 unit = 1 000 000 micros) held in BigInt: six decimals is the
 * precision the service writes, and floats would drift when thousands of prices are summed.
 */
export const MICROS_PER_UNIT = 1_000_000n;

const DECIMAL = /^(\d+)(?:\.(\d{1,6}))?$/;

/** "12.5" → 12_500_000n. Undefined for negatives, more than six decimals, or anything else. */
export function parseMoney(text: string): bigint | undefined {
  const match = DECIMAL.exec(text.trim());
  if (match === null) return undefined;
  const whole = match[1] ?? '0';
  const fraction = (match[2] ?? '').padEnd(6, '0');
  return BigInt(whole) * MICROS_PER_UNIT + BigInt(fraction);
}

/** 50_000n → "0.050000". */
export function formatMoney(micros: bigint): string {
  const sign = micros < 0n ? '-' : '';
  const abs = micros < 0n ? -micros : micros;
  return `${sign}${abs / MICROS_PER_UNIT}.${(abs % MICROS_PER_UNIT).toString().padStart(6, '0')}`;
}
