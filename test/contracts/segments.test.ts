import { describe, expect, it } from 'vitest';
import { billedText, segment } from '../../src/contracts/segments.ts';
import { formatMoney, parseMoney } from '../../src/sandbox/money.ts';
import { sendText, sendVoice } from '../../src/sandbox/operations.ts';
import { PRICE_TABLE } from '../../src/sandbox/pricing.ts';
import { renderTemplate, TEMPLATES } from '../../src/sandbox/templates.ts';
import { validateText, validateVoice } from '../../src/sandbox/validate.ts';
import type { TextCommand, VoiceCommand } from '../../src/sandbox/validate.ts';

function ids(): () => string {
  let n = 0;
  return () => `id${(n += 1)}`;
}

function text(body: unknown): TextCommand {
  const validated = validateText(body, 'CN');
  if (!validated.ok) throw new Error(`invalid: ${validated.error}`);
  return validated.value;
}

function voice(body: unknown): VoiceCommand {
  const validated = validateVoice(body, 'CN');
  if (!validated.ok) throw new Error(`invalid: ${validated.error}`);
  return validated.value;
}

describe('money', () => {
  it('parses decimals into micro-units and formats with six decimals', () => {
    expect(parseMoney('12.5')).toBe(12_500_000n);
    expect(parseMoney('0.000001')).toBe(1n);
    expect(parseMoney('1000000')).toBe(1_000_000_000_000n);
    expect(formatMoney(50_000n)).toBe('0.050000');
    expect(formatMoney(1_000_000_000_123n)).toBe('1000000.000123');
  });

  it('rejects negatives, floats beyond six decimals and junk', () => {
    for (const bad of ['-1', '0.0000001', '1e3', 'abc', '', '1.']) expect(parseMoney(bad)).toBeUndefined();
  });

  it('sums without float drift', () => {
    const sum = Array.from({ length: 10 }, () => parseMoney('0.1') ?? 0n).reduce((a, b) => a + b, 0n);
    expect(formatMoney(sum)).toBe('1.000000');
  });
});

describe('message counting', () => {
  it('GSM-7: 160 septets in one message, 153 per part beyond', () => {
    expect(segment('a'.repeat(160))).toEqual({ encoding: 'GSM-7', units: 160, parts: 1 });
    expect(segment('a'.repeat(161)).parts).toBe(2);
    expect(segment('a'.repeat(306)).parts).toBe(2);
    expect(segment('a'.repeat(307)).parts).toBe(3);
  });

  it('GSM-7 extension characters take two septets', () => {
    expect(segment('{'.repeat(80))).toEqual({ encoding: 'GSM-7', units: 160, parts: 1 });
    expect(segment('€'.repeat(81)).parts).toBe(2);
  });

  it('UCS-2: 70 code units in one message, 67 per part beyond; astral characters count 2', () => {
    expect(segment('中'.repeat(70))).toEqual({ encoding: 'UCS-2', units: 70, parts: 1 });
    expect(segment('中'.repeat(71)).parts).toBe(2);
    expect(segment('中'.repeat(134)).parts).toBe(2);
    expect(segment('中'.repeat(135)).parts).toBe(3);
    expect(segment('😀'.repeat(35)).units).toBe(70);
    expect(segment('a'.repeat(100) + 'ж').encoding).toBe('UCS-2');
  });

  it('bills 【signature】content at home and [signature] content abroad', () => {
    expect(billedText('Acme', 'hi', true)).toBe('【Acme】hi');
    expect(billedText('Acme', 'hi', false)).toBe('[Acme] hi');
  });
});

describe('templates', () => {
  it('renders variables into the template text', () => {
    expect(renderTemplate('pub_verif_ttl', { code: '1234', ttl: '5' })).toEqual({
      ok: true,
      text: 'Your verification code is 1234. It expires in 5 minutes.',
    });
    expect(TEMPLATES.pub_verif_ttl?.variables).toEqual(['code', 'ttl']);
  });

  it('refuses unknown ids and missing variables', () => {
    expect(renderTemplate('nope', {})).toMatchObject({ ok: false, reason: 'unknown-template' });
    expect(renderTemplate('pub_verif_ttl', { code: '1' })).toMatchObject({ ok: false, reason: 'missing-variable', variable: 'ttl' });
    expect(renderTemplate('toString', {})).toMatchObject({ ok: false, reason: 'unknown-template' });
  });
});

describe('pricing and charging', () => {
  it('has a table with several regions, a voice route at home and one region without upstream', () => {
    expect(Object.keys(PRICE_TABLE).length).toBeGreaterThanOrEqual(8);
    expect(PRICE_TABLE.CN?.voice).toBeDefined();
    expect(PRICE_TABLE.AU?.text).toBeNull();
  });

  it('prices each recipient by region and billed count, totals in six decimals', () => {
    const command = text({
      to: ['13800138000', '+85251234567', '+4915112345678'],
      signature: 'Acme',
      content: 'x'.repeat(65), // at home: 【Acme】 + 65 = 71 units → 2 parts; abroad: GSM-7, 1 part
    });
    const answer = sendText(command, 'CN', 10_000_000n, ids());
    if (!answer.ok) throw new Error('expected success');
    const { data } = answer.envelope;
    expect(data.messages.map((m) => [m.regionCode, m.messageCount, m.price, m.upstream])).toEqual([
      ['CN', 2, '0.090000', 'cn.cmpp.standard'],
      ['HK', 1, '0.350000', 'apac.direct'],
      ['DE', 1, '0.600000', 'eu.premium'],
    ]);
    expect(data).toMatchObject({ recipients: 3, messageCount: 4, totalAmount: '1.040000', payAmount: '1.040000', virtualAmount: '0.000000' });
    expect(answer.chargedMicros).toBe(1_040_000n);
    expect(answer.balanceMicros).toBe(8_960_000n);
    expect(data.messages.map((m) => m.id)).toEqual(['id1', 'id2', 'id3']);
  });

  it('bills a template on its rendered text', () => {
    const command = text({ to: ['13800138000'], signature: 'Acme', templateId: 'pub_verif_cn', templateData: { code: '123456', ttl: '5' } });
    const answer = sendText(command, 'CN', 10_000_000n, ids());
    expect(answer.ok && answer.envelope.data.messages[0]?.messageCount).toBe(1);
  });

  it('a balance exactly equal to the cost is enough; one micro less is 105400 and charges nothing', () => {
    const command = text({ to: ['13800138000'], signature: 'Acme', content: 'hi' });
    const exact = sendText(command, 'CN', 45_000n, ids());
    expect(exact.ok && exact.balanceMicros).toBe(0n);
    const short = sendText(command, 'CN', 44_999n, ids());
    expect(short).toEqual({ ok: false, envelope: { code: '105400', message: 'InsufficientFunds' } });
  });

  it('a recipient in a region without upstream fails the call with 101301', () => {
    const command = text({ to: ['13800138000', '+61412345678'], signature: 'Acme', content: 'hi' });
    expect(sendText(command, 'CN', 10_000_000n, ids())).toEqual({
      ok: false,
      envelope: { code: '101301', message: '未设置有效的上游服务商' },
    });
  });

  it('voice: domestic call at the voice price; international is 101301', () => {
    const answer = sendVoice(voice({ to: '13800138000', code: '1234' }), 'CN', 1_000_000n, ids());
    if (!answer.ok) throw new Error('expected success');
    expect(answer.envelope.data).toMatchObject({ recipients: 1, messageCount: 1, totalAmount: '0.050000' });
    expect(answer.envelope.data.messages[0]).toMatchObject({ upstream: 'monyun.standard', price: '0.050000', to: '+8613800138000' });
    expect(sendVoice(voice({ to: '+12025550123', code: '1234' }), 'CN', 1_000_000n, ids())).toEqual({
      ok: false,
      envelope: { code: '101301', message: '未设置有效的上游服务商' },
    });
  });
});
