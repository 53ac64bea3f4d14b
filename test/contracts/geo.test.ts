// Geo permissions (src/contracts/geo.ts) as validation applies them: pure, no I/O.
import { describe, expect, it } from 'vitest';
import { DEFAULT_VALIDATION_POLICY, geoRuleRefusing, KNOWN_REGIONS, RULES, validateCommand } from '../../src/contracts/index.ts';
import type { GeoPolicy, Validation, ValidationPolicy } from '../../src/contracts/index.ts';
import { NOW, textCommand, voiceCommand } from './fixtures.ts';

/** CN (home), US, GB, SG; and a non-geographic number (+800, region 001). */
const CN = '+8613800138000';
const US = '+14155552671';
const GB = '+447400123456';
const SG = '+6581234567';
const INTL_FREEPHONE = '+80012345678';

function withGeo(geo: Partial<GeoPolicy>, rest: Partial<ValidationPolicy> = {}): ValidationPolicy {
  return { ...DEFAULT_VALIDATION_POLICY, ...rest, geo: { ...DEFAULT_VALIDATION_POLICY.geo, ...geo } };
}

function sent(result: Validation) {
  if (result.kind !== 'send') throw new Error(`expected send, got ${JSON.stringify(result)}`);
  return result;
}

function rejected(result: Validation) {
  if (result.kind !== 'rejected') throw new Error(`expected rejected, got ${JSON.stringify(result)}`);
  return result;
}

describe('geoRuleRefusing', () => {
  const geo: GeoPolicy = {
    mode: 'enforce',
    all: { denied: ['NG'] },
    text: { allowed: ['CN', 'NG', 'US'], denied: ['US'] },
    voice: {},
  };

  it('names the rule that refuses: denials first (common, then the operation), then allow-lists', () => {
    expect(geoRuleRefusing('CN', 'text', geo)).toBeUndefined();
    expect(geoRuleRefusing('NG', 'text', geo)).toBe('GEO_DENIED_REGIONS');
    expect(geoRuleRefusing('US', 'text', geo)).toBe('GEO_TEXT_DENIED_REGIONS');
    expect(geoRuleRefusing('GB', 'text', geo)).toBe('GEO_TEXT_ALLOWED_REGIONS');
  });

  it("applies an operation's lists to that operation only", () => {
    expect(geoRuleRefusing('GB', 'voice', geo)).toBeUndefined();
    expect(geoRuleRefusing('NG', 'voice', geo)).toBe('GEO_DENIED_REGIONS');
  });

  it('refuses nothing by default', () => {
    for (const region of KNOWN_REGIONS) {
      expect(geoRuleRefusing(region, 'text', DEFAULT_VALIDATION_POLICY.geo)).toBeUndefined();
      expect(geoRuleRefusing(region, 'voice', DEFAULT_VALIDATION_POLICY.geo)).toBeUndefined();
    }
  });
});

describe('geo permissions: text messages', () => {
  it('default: every region is sent to, as before', () => {
    const result = sent(validateCommand(textCommand({ to: [CN, US, GB, SG, INTL_FREEPHONE] }), DEFAULT_VALIDATION_POLICY, NOW));
    expect(result.footprint.regions).toEqual(['001', 'CN', 'GB', 'SG', 'US']);
    expect(result).not.toHaveProperty('geoRefusals');
  });

  it('allow-list: a recipient elsewhere rejects the command, naming its index, region and rule; the code is REGION_NOT_ALLOWED', () => {
    const result = rejected(validateCommand(textCommand({ to: [CN, US, SG] }), withGeo({ all: { allowed: ['CN', 'SG'] } }), NOW));
    expect(result.problems).toEqual([{ field: 'operation.to[1]', problem: "recipient's region US is not in GEO_ALLOWED_REGIONS (REGION_NOT_ALLOWED)" }]);
    expect(result.code).toBe('REGION_NOT_ALLOWED');
    expect(result.geoRefusals).toEqual([{ field: 'operation.to[1]', operation: 'text', region: 'US', rule: 'GEO_ALLOWED_REGIONS' }]);
  });

  it('deny-list: a denied region rejects, the others do not', () => {
    const policy = withGeo({ all: { denied: ['001', 'GB'] } });
    expect(sent(validateCommand(textCommand({ to: [CN, US] }), policy, NOW)).footprint.regions).toEqual(['CN', 'US']);
    const result = rejected(validateCommand(textCommand({ to: [GB, CN, INTL_FREEPHONE] }), policy, NOW));
    expect(result.problems).toEqual([
      { field: 'operation.to[0]', problem: "recipient's region GB is in GEO_DENIED_REGIONS (REGION_NOT_ALLOWED)" },
      { field: 'operation.to[2]', problem: "recipient's region 001 (non-geographic) is in GEO_DENIED_REGIONS (REGION_NOT_ALLOWED)" },
    ]);
    expect(result.code).toBe('REGION_NOT_ALLOWED');
  });

  it('both: allowed minus denied, each refusal naming its own rule', () => {
    const policy = withGeo({ all: { allowed: ['CN', 'SG', 'US'] }, text: { denied: ['US'] } });
    expect(sent(validateCommand(textCommand({ to: [CN, SG] }), policy, NOW)).kind).toBe('send');
    const result = rejected(validateCommand(textCommand({ to: [US, GB] }), policy, NOW));
    expect(result.geoRefusals?.map((r) => [r.field, r.region, r.rule])).toEqual([
      ['operation.to[0]', 'US', 'GEO_TEXT_DENIED_REGIONS'],
      ['operation.to[1]', 'GB', 'GEO_ALLOWED_REGIONS'],
    ]);
  });

  it("voice's lists do not apply to text messages", () => {
    const policy = withGeo({ voice: { denied: ['CN'] } });
    expect(sent(validateCommand(textCommand({ to: [CN] }), policy, NOW)).kind).toBe('send');
  });

  it('with other problems too: every problem is reported and the code stays VALIDATION_FAILED', () => {
    const result = rejected(validateCommand(textCommand({ to: [US, 'bogus'], signature: 'x' }), withGeo({ text: { allowed: ['CN'] } }), NOW));
    expect(result.problems.map((p) => p.field)).toEqual(['operation.to[0]', 'operation.to[1]', 'operation.signature']);
    expect(result.code).toBeUndefined();
    expect(result.geoRefusals).toHaveLength(1);
  });

  it('the problem text stays within what a rejected recipient may carry (docs/contracts.md: 191 characters)', () => {
    for (const region of KNOWN_REGIONS) {
      for (const rule of ['GEO_TEXT_ALLOWED_REGIONS', 'GEO_VOICE_DENIED_REGIONS'] as const) {
        expect(RULES.recipientRegionRefused.message(region, rule).length).toBeLessThanOrEqual(191);
      }
    }
  });
});

describe('geo permissions under PARTIAL_RECIPIENTS=send-valid', () => {
  const policy = withGeo({ text: { denied: ['US'] } }, { partialRecipients: 'send-valid' });

  it('drops only the refused recipient, listing it with the reason; the rest is sent and billed without it', () => {
    const result = sent(validateCommand(textCommand({ to: [CN, US, 'bogus', SG] }), policy, NOW));
    expect(result.request.body).toMatchObject({ to: [CN, SG] });
    expect(result.rejectedRecipients).toEqual([
      { to: US, problem: "recipient's region US is in GEO_TEXT_DENIED_REGIONS (REGION_NOT_ALLOWED)" },
      { to: 'bogus', problem: expect.stringMatching(/^recipient must be ASCII digits/) as unknown },
    ]);
    expect(result.footprint.regions).toEqual(['CN', 'SG']);
    expect(result.geoRefusals).toEqual([{ field: 'operation.to[1]', operation: 'text', region: 'US', rule: 'GEO_TEXT_DENIED_REGIONS' }]);
  });

  it('lists every occurrence of a refused number, like an invalid one', () => {
    const result = sent(validateCommand(textCommand({ to: [US, CN, US] }), policy, NOW));
    expect(result.rejectedRecipients.map((r) => r.to)).toEqual([US, US]);
    expect(result.geoRefusals?.map((r) => r.field)).toEqual(['operation.to[0]', 'operation.to[2]']);
  });

  it('every recipient refused: REJECTED with REGION_NOT_ALLOWED (nothing to send)', () => {
    const result = rejected(validateCommand(textCommand({ to: [US, US] }), policy, NOW));
    expect(result.code).toBe('REGION_NOT_ALLOWED');
    expect(result.problems).toEqual([
      { field: 'operation.to[0]', problem: "recipient's region US is in GEO_TEXT_DENIED_REGIONS (REGION_NOT_ALLOWED)" },
      { field: 'operation.to[1]', problem: "recipient's region US is in GEO_TEXT_DENIED_REGIONS (REGION_NOT_ALLOWED)" },
      { field: 'operation.to', problem: RULES.recipientsNoneValid.message(2) },
    ]);
  });

  it('every recipient rejected, not all by geo: VALIDATION_FAILED', () => {
    expect(rejected(validateCommand(textCommand({ to: [US, 'bogus'] }), policy, NOW)).code).toBeUndefined();
  });
});

describe('geo permissions: monitor mode', () => {
  it('sends to every recipient as usual and reports the ones the lists would refuse', () => {
    const policy = withGeo({ mode: 'monitor', all: { allowed: ['CN'] } });
    const result = sent(validateCommand(textCommand({ to: [CN, US, GB] }), policy, NOW));
    expect(result.request.body).toMatchObject({ to: [CN, US, GB] });
    expect(result.rejectedRecipients).toEqual([]);
    expect(result.footprint.regions).toEqual(['CN', 'GB', 'US']);
    expect(result.geoRefusals?.map((r) => [r.field, r.region, r.rule])).toEqual([
      ['operation.to[1]', 'US', 'GEO_ALLOWED_REGIONS'],
      ['operation.to[2]', 'GB', 'GEO_ALLOWED_REGIONS'],
    ]);
  });

  it('sends a voice code the lists would refuse, reporting it', () => {
    const result = sent(validateCommand(voiceCommand(), withGeo({ mode: 'monitor', voice: { denied: ['CN'] } }), NOW));
    expect(result.geoRefusals).toEqual([{ field: 'operation.to', operation: 'voice', region: 'CN', rule: 'GEO_VOICE_DENIED_REGIONS' }]);
  });
});

describe('geo permissions: voice codes', () => {
  it("a voice deny-list refuses the callee's region (voice goes to HOME_REGION only, so this stops voice codes)", () => {
    const result = rejected(validateCommand(voiceCommand(), withGeo({ voice: { denied: ['CN'] } }), NOW));
    expect(result.problems).toEqual([{ field: 'operation.to', problem: "callee's region CN is in GEO_VOICE_DENIED_REGIONS (REGION_NOT_ALLOWED)" }]);
    expect(result.code).toBe('REGION_NOT_ALLOWED');
  });

  it("text's lists do not apply to voice codes; the common ones do", () => {
    expect(sent(validateCommand(voiceCommand(), withGeo({ text: { allowed: ['US'] } }), NOW)).kind).toBe('send');
    expect(rejected(validateCommand(voiceCommand(), withGeo({ all: { allowed: ['US'] } }), NOW)).geoRefusals?.[0]?.rule).toBe('GEO_ALLOWED_REGIONS');
  });

  it('an international callee is refused by the domestic rule, not counted as a geo refusal', () => {
    const result = rejected(validateCommand(voiceCommand({ to: US }), withGeo({ all: { denied: ['US'] } }), NOW));
    expect(result.problems).toEqual([{ field: 'operation.to', problem: RULES.calleeInternational.message('CN', 'US', '1') }]);
    expect(result).not.toHaveProperty('geoRefusals');
    expect(result.code).toBeUndefined();
  });

  it('a refused callee with a bad code: both reported, VALIDATION_FAILED', () => {
    const result = rejected(validateCommand(voiceCommand({ code: '12' }), withGeo({ voice: { denied: ['CN'] } }), NOW));
    expect(result.problems.map((p) => p.field)).toEqual(['operation.to', 'operation.code']);
    expect(result.code).toBeUndefined();
  });
});
