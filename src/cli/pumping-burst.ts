/**
 * A pumping burst for demos and tests (`sms-worker produce --burst N`): N verification texts to
 * random numbers of one premium-range prefix, as bots requesting codes on a sign-up form send
 * them. Pure: the randomness is injected. The lines are the JSON `produce` reads, so they go
 * through the same checks as typed ones.
 */

/** A number range of the sandbox's premium-range region: Uzbekistan mobile numbers +998 90 12… (nine national digits), priced high. */
export const DEFAULT_BURST_PREFIX = '+9989012';
/** Most commands one burst may make (a demo, not a load test: `npm run bench` is that). */
export const MAX_BURST = 100_000;
/** National digits of the numbers a burst makes, counted with those of its prefix (UZ numbers have nine). */
const BURST_NUMBER_DIGITS = 12;

/** Checks `--burst` and `--burst-prefix`; a problem as words, for a usage error. */
export function burstProblem(count: string, prefix: string): string | undefined {
  if (!/^\d+$/.test(count) || Number(count) < 1 || Number(count) > MAX_BURST)
    return `--burst: expected a count from 1 to ${MAX_BURST}; got ${count.slice(0, 20)}`;
  if (!/^\+\d{3,11}$/.test(prefix))
    return `--burst-prefix: expected '+' and 3 to 11 digits (calling code and the first national digits); got ${prefix.slice(0, 20)}`;
  return undefined;
}

/** One `produce` JSON line per command: a text with a 6-digit code to `prefix` + random digits (to 12 digits after '+'). */
export function pumpingBurst(count: number, prefix: string = DEFAULT_BURST_PREFIX, random: () => number = Math.random): string[] {
  const digits = Math.max(0, BURST_NUMBER_DIGITS - (prefix.length - 1));
  const pick = (n: number): string => Array.from({ length: n }, () => Math.floor(random() * 10)).join('');
  return Array.from({ length: count }, () =>
    JSON.stringify({ text: { to: [`${prefix}${pick(digits)}`], signature: 'Acme', content: `Your code is ${pick(6)}` }, expiresInSeconds: 300 }),
  );
}
