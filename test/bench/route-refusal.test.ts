import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { kindAt, makeCommand, openLoopCommand, prng, REFUSED_REGION, REFUSED_ROUTE_RECIPIENT } from '../../bench/lib/commands.ts';
import { outcomeCounts, requestsPerCommand, routeRefusalTargets } from '../../bench/lib/route-refusal.ts';

describe('openLoopCommand', () => {
  it('sends the refused share to a valid mobile of the refused region and leaves every other command as without it', () => {
    const phone = parsePhoneNumberFromString(REFUSED_ROUTE_RECIPIENT);
    expect([phone?.isValid(), phone?.country, phone?.getType()]).toEqual([true, REFUSED_REGION, 'MOBILE']);
    const plain = prng(7);
    const mixed = prng(7);
    const refusal = { random: prng(99), share: 0.05 };
    let refused = 0;
    for (let i = 0; i < 2000; i += 1) {
      const usual = makeCommand(`c-${i}`, kindAt(plain), plain, 0);
      const { kind, command } = openLoopCommand(`c-${i}`, mixed, refusal, 0);
      if (kind === 'refused-route') {
        refused += 1;
        expect(command.operation).toMatchObject({ kind: 'text', to: [REFUSED_ROUTE_RECIPIENT] });
      } else expect(command).toEqual(usual);
    }
    expect(refused).toBeGreaterThan(60);
    expect(refused).toBeLessThan(140);
  });
});

describe('requestsPerCommand', () => {
  it('counts requests per id, 0 for an id that never reached the service, and ignores other ids', () => {
    const log = [{ correlationId: 'a' }, { correlationId: 'b' }, { correlationId: 'a' }, { correlationId: undefined }, { correlationId: 'x' }];
    const counted = requestsPerCommand(log, ['a', 'b', 'c']);
    expect(Object.fromEntries(counted.perId)).toEqual({ a: 2, b: 1, c: 0 });
    expect(counted.max).toBe(2);
    expect(counted.distribution).toEqual({ '0': 1, '1': 1, '2': 1 });
    expect(requestsPerCommand(log, []).max).toBeNaN();
  });
});

describe('outcomeCounts', () => {
  it('counts the first result per id with its error code, and ids without a result', () => {
    const failed = { outcome: 'FAILED' as const, error: { code: '101301', message: '', stage: 'PROVIDER' as const, retryable: true, details: [] } };
    const sent = { outcome: 'SENT' as const, error: null };
    const results = new Map([
      ['a', [sent]],
      ['b', [failed, sent]],
    ]);
    expect(outcomeCounts(['a', 'b', 'c'], results)).toEqual({ counts: { SENT: 1, 'FAILED 101301': 1, 'no result': 1 }, duplicates: 1 });
  });
});

describe('routeRefusalTargets', () => {
  const base = { routableP99Ms: 140, baselineP99Ms: 20, routablePublished: 100, routableSent: 100, maxRequestsPerRefused: 2 };
  it('is met at the limits: p99 ≤ 2 × baseline + 100 ms, every routable command SENT, ≤ 2 requests per refused command', () => {
    expect(routeRefusalTargets(base)).toEqual({ p99LimitMs: 140, p99Met: true, allSentMet: true, requestsMet: true });
  });
  it('is not met past them, nor on a figure that could not be measured', () => {
    expect(routeRefusalTargets({ ...base, routableP99Ms: 141 }).p99Met).toBe(false);
    expect(routeRefusalTargets({ ...base, routableP99Ms: Number.NaN }).p99Met).toBe(false);
    expect(routeRefusalTargets({ ...base, routableSent: 99 }).allSentMet).toBe(false);
    expect(routeRefusalTargets({ ...base, maxRequestsPerRefused: 3 }).requestsMet).toBe(false);
    expect(routeRefusalTargets({ ...base, maxRequestsPerRefused: Number.NaN }).requestsMet).toBe(false);
  });
});
