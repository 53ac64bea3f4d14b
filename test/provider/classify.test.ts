import { describe, expect, it } from 'vitest';
import { classifyOutcome, MAX_PROVIDER_MESSAGE } from '../../src/provider/classify.ts';
import type { AttemptOutcome, Classification } from '../../src/provider/classify.ts';
import { parseEnvelope } from '../../src/provider/envelope.ts';

const NOW = Date.parse('2025-01-01T00:00:00Z');
const TEXT = 'sms.message.send' as const;
const VOICE = 'sms.voice.verification.send' as const;

const report = {
  id: 'm1',
  to: '+8613800138000',
  regionCode: 'CN',
  countryCode: '86',
  messageCount: 1,
  status: 'sent',
  upstream: 'cn.cmpp.standard',
  price: '0.045000',
};
const data = {
  recipients: 1,
  messageCount: 1,
  totalAmount: '0.045000',
  payAmount: '0.045000',
  virtualAmount: '0.000000',
  messages: [report],
};

function response(status: number, body: unknown, extra: Partial<Extract<AttemptOutcome, { kind: 'response' }>> = {}): AttemptOutcome {
  return { kind: 'response', status, body: typeof body === 'string' ? body : JSON.stringify(body), ...extra };
}

function failure(verdict: Classification) {
  if (verdict.ok) throw new Error('expected a failure');
  return verdict.failure;
}

describe('classifyOutcome: HTTP answers', () => {
  it('200 with code "0" and well-formed data is a success, amounts kept as strings', () => {
    const verdict = classifyOutcome(response(200, { code: '0', message: 'Success', data }, { requestId: 'r1' }), TEXT, NOW);
    expect(verdict).toEqual({ ok: true, result: data, requestId: 'r1' });
  });

  it('voice success without virtualAmount gets "0.000000"', () => {
    const { virtualAmount: _omitted, ...voiceData } = data;
    const verdict = classifyOutcome(response(200, { code: '0', message: 'Success', data: voiceData }), VOICE, NOW);
    expect(verdict.ok && verdict.result.virtualAmount).toBe('0.000000');
  });

  it('105400 is insufficient-funds, 101301 configuration, any other code business', () => {
    const funds = failure(classifyOutcome(response(400, { code: '105400', message: 'InsufficientFunds' }), TEXT, NOW));
    expect(funds).toMatchObject({ failureClass: 'insufficient-funds', code: '105400', providerMessage: 'InsufficientFunds', httpStatus: 400 });
    const upstream = failure(classifyOutcome(response(400, { code: '101301', message: '未设置有效的上游服务商' }), VOICE, NOW));
    expect(upstream).toMatchObject({ failureClass: 'configuration', code: '101301' });
    const other = failure(classifyOutcome(response(400, { code: '123456', message: 'Whatever' }), TEXT, NOW));
    expect(other).toMatchObject({ failureClass: 'business', code: '123456', providerMessage: 'Whatever' });
  });

  it('a non-"0" code is a business failure whatever the status (here 200 and 403)', () => {
    expect(failure(classifyOutcome(response(200, { code: '105400', message: 'x' }), TEXT, NOW)).failureClass).toBe('insufficient-funds');
    expect(failure(classifyOutcome(response(403, { code: '900101', message: 'x' }), TEXT, NOW)).failureClass).toBe('business');
  });

  it('429 and 503 are throttled with Retry-After in ms, whatever the body', () => {
    const t429 = failure(classifyOutcome(response(429, 'slow down', { retryAfter: '2' }), TEXT, NOW));
    expect(t429).toMatchObject({ failureClass: 'throttled', code: 'PROVIDER_THROTTLED', retryAfterMs: 2_000, httpStatus: 429 });
    const t503 = failure(classifyOutcome(response(503, { code: '105400', message: 'x' }, { retryAfter: 'Wed, 01 Jan 2025 00:00:03 GMT' }), TEXT, NOW));
    expect(t503).toMatchObject({ failureClass: 'throttled', code: 'PROVIDER_UNAVAILABLE', retryAfterMs: 3_000 });
  });

  it('500, 502 and 504 are ambiguous, and say so', () => {
    for (const status of [500, 502, 504]) {
      const f = failure(classifyOutcome(response(status, { code: '900500', message: 'x' }), TEXT, NOW));
      expect(f).toMatchObject({ failureClass: 'ambiguous', code: `PROVIDER_HTTP_${status}`, httpStatus: status });
      expect(f.detail).toContain('ambiguous');
    }
  });

  it('other statuses without an envelope: 4xx business PROVIDER_HTTP_<status>, 5xx ambiguous', () => {
    expect(failure(classifyOutcome(response(409, '<html>nope</html>'), TEXT, NOW))).toMatchObject({
      failureClass: 'business',
      code: 'PROVIDER_HTTP_409',
    });
    expect(failure(classifyOutcome(response(507, ''), TEXT, NOW))).toMatchObject({ failureClass: 'ambiguous', code: 'PROVIDER_HTTP_507' });
  });

  it.each([401, 403, 404, 407])('%i without an envelope is configuration (revoked key, wrong URL, proxy): the service refuses this client', (status) => {
    expect(failure(classifyOutcome(response(status, '<html>Forbidden</html>'), TEXT, NOW))).toMatchObject({
      failureClass: 'configuration',
      code: `PROVIDER_HTTP_${status}`,
      answered: true,
    });
  });

  it('an answer says it was answered (stage PROVIDER), 5xx included; a transport failure says it was not (stage TRANSPORT)', () => {
    for (const status of [500, 502, 503, 504, 429, 400, 200]) {
      expect(failure(classifyOutcome(response(status, status === 200 ? 'not json' : ''), TEXT, NOW)).answered, String(status)).toBe(true);
    }
    expect(failure(classifyOutcome({ kind: 'network', errorCode: 'ECONNREFUSED' }, TEXT, NOW)).answered).toBe(false);
    expect(failure(classifyOutcome({ kind: 'network', errorCode: 'ETIMEDOUT', timeoutPhase: 'response' }, TEXT, NOW)).answered).toBe(false);
    expect(failure(classifyOutcome({ kind: 'aborted' }, TEXT, NOW)).answered).toBe(false);
  });

  it('an answer over the byte cap is malformed with its own code, whatever its status', () => {
    for (const status of [200, 503]) {
      expect(failure(classifyOutcome({ kind: 'oversized', status, limitBytes: 1_024, requestId: 'r'.repeat(5_000) }, TEXT, NOW))).toMatchObject({
        failureClass: 'malformed',
        code: 'PROVIDER_RESPONSE_TOO_LARGE',
        httpStatus: status,
        answered: true,
        requestId: expect.stringMatching(/^r{127}…$/) as unknown,
      });
    }
  });

  it("the service's message is cut to MAX_PROVIDER_MESSAGE characters (a 2 MB message is not copied)", () => {
    const huge = 'x'.repeat(2_000_000);
    for (const status of [400, 429, 500]) {
      const f = failure(classifyOutcome(response(status, { code: '100001', message: huge }), TEXT, NOW));
      expect(f.providerMessage.length, String(status)).toBeLessThanOrEqual(MAX_PROVIDER_MESSAGE);
      expect(f.detail.length, String(status)).toBeLessThan(MAX_PROVIDER_MESSAGE + 200);
    }
  });

  it("a `code` longer than 64 characters is not the service's code: no envelope", () => {
    expect(failure(classifyOutcome(response(400, { code: '9'.repeat(65), message: 'x' }), TEXT, NOW))).toMatchObject({
      failureClass: 'business',
      code: 'PROVIDER_HTTP_400',
    });
    expect(failure(classifyOutcome(response(200, { code: '9'.repeat(65), message: 'x' }), TEXT, NOW))).toMatchObject({ failureClass: 'malformed' });
  });

  it('malformed answers are classified, never thrown', () => {
    const cases: unknown[] = [
      '<html>oops</html>',
      '',
      '[]',
      { message: 'no code' },
      { code: 0, message: 'numeric code' },
      { code: '0', message: 'Success' },
      { code: '0', message: 'Success', data: { ...data, totalAmount: 0.045 } },
      { code: '0', message: 'Success', data: { ...data, totalAmount: '1e3' } },
      { code: '0', message: 'Success', data: { ...data, messages: [{ ...report, messageCount: '1' }] } },
      { code: '0', message: 'Success', data: { ...data, virtualAmount: undefined } },
    ];
    for (const body of cases) {
      const f = failure(classifyOutcome(response(200, body), TEXT, NOW));
      expect(f).toMatchObject({ failureClass: 'malformed', code: 'PROVIDER_MALFORMED_RESPONSE' });
    }
  });

  it('a 2xx other than 200 is not a success', () => {
    expect(failure(classifyOutcome(response(202, { code: '0', message: 'Success', data }), TEXT, NOW)).failureClass).toBe('malformed');
  });
});

describe('classifyOutcome: transport', () => {
  it('refused, DNS and connect-phase timeouts are transport (not sent)', () => {
    for (const errorCode of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']) {
      expect(failure(classifyOutcome({ kind: 'network', errorCode }, TEXT, NOW))).toMatchObject({
        failureClass: 'transport',
        code: 'PROVIDER_CONNECTION_FAILED',
      });
    }
    for (const timeoutPhase of ['lookup', 'connect', 'secureConnect']) {
      expect(failure(classifyOutcome({ kind: 'network', errorCode: 'ETIMEDOUT', timeoutPhase }, TEXT, NOW))).toMatchObject({
        failureClass: 'transport',
        code: 'PROVIDER_CONNECT_TIMEOUT',
      });
    }
  });

  it('timeouts after sending, resets and unknown errors are ambiguous', () => {
    for (const timeoutPhase of ['send', 'response', 'read', 'request']) {
      expect(failure(classifyOutcome({ kind: 'network', errorCode: 'ETIMEDOUT', timeoutPhase }, TEXT, NOW))).toMatchObject({
        failureClass: 'ambiguous',
        code: 'PROVIDER_TIMEOUT',
      });
    }
    for (const errorCode of ['ECONNRESET', 'EPIPE']) {
      expect(failure(classifyOutcome({ kind: 'network', errorCode }, TEXT, NOW))).toMatchObject({
        failureClass: 'ambiguous',
        code: 'PROVIDER_CONNECTION_RESET',
      });
    }
    expect(failure(classifyOutcome({ kind: 'network', errorCode: undefined }, TEXT, NOW)).failureClass).toBe('ambiguous');
  });

  it('an abort by the caller is ambiguous with its own code', () => {
    expect(failure(classifyOutcome({ kind: 'aborted' }, TEXT, NOW))).toMatchObject({ failureClass: 'ambiguous', code: 'PROVIDER_ABORTED' });
  });
});

describe('parseEnvelope', () => {
  it('accepts a failure envelope without message', () => {
    expect(parseEnvelope('{"code":"105400"}', TEXT)).toEqual({ kind: 'failure', code: '105400', message: '' });
  });
  it('says what is wrong with a bad success', () => {
    const parsed = parseEnvelope(JSON.stringify({ code: '0', message: 'Success', data: { ...data, payAmount: null } }), TEXT);
    expect(parsed).toMatchObject({ kind: 'bad-success' });
    expect(parsed.kind === 'bad-success' && parsed.problem).toContain('payAmount');
  });
});

describe('classifyOutcome: numbers and amounts out of range make a success malformed', () => {
  const withData = (patch: Record<string, unknown>, reportPatch: Record<string, unknown> = {}) =>
    response(200, { code: '0', message: 'Success', data: { ...data, ...patch, messages: [{ ...report, ...reportPatch }] } });

  it.each([
    ['messageCount 3,000,000,000', { messageCount: 3_000_000_000 }, {}],
    ['recipients 2^31', { recipients: 2 ** 31 }, {}],
    ['negative recipients', { recipients: -1 }, {}],
    ['fractional messageCount', { messageCount: 1.5 }, {}],
    ['per-message messageCount 2^31', {}, { messageCount: 2 ** 31 }],
    ['negative per-message messageCount', {}, { messageCount: -1 }],
    ['a 400-digit price', {}, { price: '9'.repeat(400) }],
    ['price "NaN"', {}, { price: 'NaN' }],
    ['price "Infinity"', {}, { price: 'Infinity' }],
    ['price "-1"', {}, { price: '-1' }],
    ['price "-0.045000"', {}, { price: '-0.045000' }],
    ['price "1e3"', {}, { price: '1e3' }],
    ['price " 0.045000"', {}, { price: ' 0.045000' }],
    ['price ".5"', {}, { price: '.5' }],
    ['price "0."', {}, { price: '0.' }],
    ['price with 19 fractional digits', {}, { price: `0.${'1'.repeat(19)}` }],
    ['price as a number', {}, { price: 0.045 }],
    ['totalAmount with 19 integer digits', { totalAmount: '1'.repeat(19) }, {}],
    ['payAmount "NaN"', { payAmount: 'NaN' }, {}],
    ['a 257-character id', {}, { id: 'i'.repeat(257) }],
    ['a 1 MB upstream', {}, { upstream: 'u'.repeat(1_000_000) }],
  ])('%s', (_name, patch, reportPatch) => {
    const f = failure(classifyOutcome(withData(patch, reportPatch), TEXT, NOW));
    expect(f).toMatchObject({ failureClass: 'malformed', code: 'PROVIDER_MALFORMED_RESPONSE' });
    expect(f.detail.length).toBeLessThan(500);
  });

  it.each([
    ["the spec's six fractional digits", { price: '0.045000' }],
    ['an integer', { price: '3' }],
    ['18 digits on each side', { price: `${'9'.repeat(18)}.${'9'.repeat(18)}` }],
    ['the largest Avro int', { messageCount: 2_147_483_647 }],
    ['zero', { messageCount: 0, price: '0' }],
  ])('accepts %s', (_name, reportPatch) => {
    expect(classifyOutcome(withData({}, reportPatch), TEXT, NOW).ok).toBe(true);
  });
});
