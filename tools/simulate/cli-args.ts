/** Flag parsing of the simulation's command lines (main.ts, shipped-lane.ts, failover.ts). */

export function choice<const T extends string>(name: string, value: string | undefined, allowed: readonly T[], fallback: NoInfer<T>): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) throw new Error(`--${name} must be one of ${allowed.join(', ')} (got ${value})`);
  return value as T;
}

export function integer(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer (got ${value})`);
  return n;
}
