import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { DEFAULT_VALIDATION_POLICY, validateCommand } from '../../src/contracts/validate.ts';
import { CN_TEXT_PRICE, cnMobiles, cnText, COSTLY_RECIPIENTS, FUNDS_BALANCE, fundsRefusalTargets } from '../../bench/lib/funds-refusal.ts';

describe('cnMobiles', () => {
  it('gives distinct valid CN mobiles, enough for a command the balance cannot cover', () => {
    const numbers = cnMobiles(COSTLY_RECIPIENTS);
    expect(new Set(numbers).size).toBe(COSTLY_RECIPIENTS);
    for (const n of [numbers[0], numbers[COSTLY_RECIPIENTS - 1], ...cnMobiles(3, '139')]) {
      const phone = parsePhoneNumberFromString(n as string);
      expect([phone?.isValid(), phone?.country, phone?.getType()]).toEqual([true, 'CN', 'MOBILE']);
    }
    expect(COSTLY_RECIPIENTS * CN_TEXT_PRICE).toBeGreaterThan(Number(FUNDS_BALANCE));
    expect(new Set([...numbers, ...cnMobiles(60, '139')]).size).toBe(COSTLY_RECIPIENTS + 60);
  });
});

describe('cnText', () => {
  it('passes the worker’s validation: the costly one as 1,000 billed units, an affordable one as 1', () => {
    const costly = validateCommand(cnText('c', cnMobiles(COSTLY_RECIPIENTS), 'unaffordable', 0), DEFAULT_VALIDATION_POLICY, 0);
    const cheap = validateCommand(cnText('a', cnMobiles(1, '139'), 'affordable', 0), DEFAULT_VALIDATION_POLICY, 0);
    expect(costly.kind === 'send' && costly.footprint.costUnits).toBe(COSTLY_RECIPIENTS);
    expect(costly.kind === 'send' && costly.rejectedRecipients.length).toBe(0);
    expect(cheap.kind === 'send' && cheap.footprint).toMatchObject({ regions: ['CN'], costUnits: 1 });
  });
});

describe('fundsRefusalTargets', () => {
  const base = { affordablePublished: 60, affordableSent: 60, affordableP99Ms: 5_000, unaffordableOutcome: 'FAILED 105400', unaffordableRequests: 2 };
  it('is met at the limits: every affordable command SENT, p99 ≤ 5 s, the unaffordable one FAILED 105400 after ≤ 2 requests', () => {
    expect(fundsRefusalTargets(base)).toEqual({ allSentMet: true, p99Met: true, unaffordableMet: true });
  });
  it('is not met past them, nor on a figure that could not be measured', () => {
    expect(fundsRefusalTargets({ ...base, affordableSent: 59 }).allSentMet).toBe(false);
    expect(fundsRefusalTargets({ ...base, affordablePublished: 0, affordableSent: 0 }).allSentMet).toBe(false);
    expect(fundsRefusalTargets({ ...base, affordableP99Ms: 5_001 }).p99Met).toBe(false);
    expect(fundsRefusalTargets({ ...base, affordableP99Ms: Number.NaN }).p99Met).toBe(false);
    expect(fundsRefusalTargets({ ...base, unaffordableRequests: 3 }).unaffordableMet).toBe(false);
    expect(fundsRefusalTargets({ ...base, unaffordableOutcome: 'SENT' }).unaffordableMet).toBe(false);
    expect(fundsRefusalTargets({ ...base, unaffordableOutcome: 'FAILED 101301' }).unaffordableMet).toBe(false);
    expect(fundsRefusalTargets({ ...base, unaffordableOutcome: 'no result', unaffordableRequests: 0 }).unaffordableMet).toBe(false);
  });
});
