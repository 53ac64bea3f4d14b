import { describe, expect, it } from 'vitest';
import { isDomestic, parsePhone } from '../../src/contracts/index.ts';

describe('parsePhone', () => {
  it.each([
    ['13800138000', '+8613800138000', '13800138000', 'CN'],
    ['+8613800138000', '+8613800138000', '13800138000', 'CN'],
    ['18509872103', '+8618509872103', '18509872103', 'CN'],
    ['+14155552671', '+14155552671', '4155552671', 'US'],
    ['+442071838750', '+442071838750', '2071838750', 'GB'],
  ])('accepts %s as %s (national %s, region %s)', (input, e164, national, region) => {
    const parsed = parsePhone(input, 'CN');
    expect(parsed).toEqual({ ok: true, phone: { e164, national, region, callingCode: expect.any(String) } });
  });

  it.each([
    ['', 'empty'],
    ['   ', 'empty'],
    ['+86 138 0013 8000', 'syntax'],
    ['138-0013-8000', 'syntax'],
    ['１３８００１３８０００', 'syntax'], // full-width digits: libphonenumber would accept them
    ['١٣٨٠٠١٣٨٠٠٠', 'syntax'], // Arabic-Indic digits
    ['tel:13800138000', 'syntax'],
    ['86+13800138000', 'syntax'],
    ['12345', 'too-short'],
    ['+1234', 'too-short'],
    ['1380013800', 'invalid'], // one digit short of a CN mobile, still a possible length
    ['+99912345678', 'unknown-calling-code'],
  ])('refuses %j: %s', (input, problem) => {
    expect(parsePhone(input, 'CN')).toEqual({ ok: false, problem });
  });

  it('reads a national number in the given home region', () => {
    const parsed = parsePhone('4155552671', 'US');
    expect(parsed.ok && parsed.phone.e164).toBe('+14155552671');
  });

  it('calls a number domestic only for the home region itself, not for its calling code', () => {
    const canada = parsePhone('+16135550123', 'US');
    const us = parsePhone('+14155552671', 'US');
    expect(canada.ok && isDomestic(canada.phone, 'US')).toBe(false);
    expect(us.ok && isDomestic(us.phone, 'US')).toBe(true);
  });
});
