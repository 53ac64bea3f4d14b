import got from 'got';
import { describe, expect, it } from 'vitest';
import { computeSignature } from '../../src/provider/signing.ts';
import { SANDBOX_ERRORS } from '../../src/sandbox/error-codes.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { useSandbox } from '../helpers/fixtures.ts';

const KEY_ID = 'sandbox-test-key';
const SECRET = 'sandbox-test-secret';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  raw: string;
}

const sandbox = useSandbox({ accessKeyId: KEY_ID, accessKeySecret: SECRET, balance: '10.000000', logCapacity: 1000 }, { resetAfterEach: true });

/** Signed query string as the client builds it; pieces overridable to forge bad requests. */
function query(action: string, overrides: Record<string, string | undefined> = {}): string {
  const params: Record<string, string> = {
    action,
    accessKeyId: KEY_ID,
    algorithm: 'hmac-sha256',
    timestamp: String(Date.now()),
    nonce: 'abcdef0123456789',
  };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete params[key];
    else params[key] = value;
  }
  const signature = overrides.signature ?? computeSignature(params, SECRET);
  return new URLSearchParams({ ...params, signature }).toString();
}

async function call(path: string, options: { method?: 'GET' | 'POST'; body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const response = await got(`${sandbox.url}${path}`, {
    method: options.method ?? 'POST',
    body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
    headers: { 'content-type': 'application/json', ...options.headers },
    throwHttpErrors: false,
    retry: { limit: 0 },
    responseType: 'text',
  });
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = undefined;
  }
  return { status: response.statusCode, headers: response.headers, body, raw: response.body };
}

const send = (body: unknown, overrides: Record<string, string | undefined> = {}) => call(`/?${query('sms.message.send', overrides)}`, { body });
const voice = (body: unknown) => call(`/?${query('sms.voice.verification.send')}`, { body });

describe('sandbox: the service envelopes', () => {
  it('answers a success with HTTP 200, code "0", data and a request id', async () => {
    const answer = await send({ to: ['+8613800138000', '+447400123456'], signature: 'Acme', content: 'hello' });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-uni-request-id']).toMatch(/^[0-9a-f]+$/);
    expect(answer.body).toMatchObject({
      code: '0',
      message: 'Success',
      data: { recipients: 2, messageCount: 2, totalAmount: '0.345000', payAmount: '0.345000', virtualAmount: '0.000000' },
    });
    expect(sandbox.state.balance).toBe('9.655000');
  });

  it('answers failures with HTTP 400 and only code and message', async () => {
    const answer = await send({ to: ['+61412345678'], signature: 'Acme', content: 'hello' });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: '101301', message: '未设置有效的上游服务商' });
    expect(answer.headers['x-uni-request-id']).toBeDefined();
  });

  it('insufficient funds: 105400 and the balance is unchanged', async () => {
    sandbox.state.setBalance('0.100000');
    const answer = await send({ to: ['+4915112345678'], signature: 'Acme', content: 'hello' });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: '105400', message: 'InsufficientFunds' });
    expect(sandbox.state.balance).toBe('0.100000');
    expect(sandbox.state.stats().acceptedSends).toBe(0);
  });

  it('voice: a domestic call succeeds, an international one gets 101301', async () => {
    expect((await voice({ to: '13800138000', code: '123456' })).status).toBe(200);
    const international = await voice({ to: '+85251234567', code: '1234' });
    expect(international.body).toEqual({ code: '101301', message: '未设置有效的上游服务商' });
  });
});

describe('sandbox: validation error codes', () => {
  const valid = { to: ['+8613800138000'], signature: 'Acme', content: 'hello' };
  const cases: [string, () => Promise<Answer>, string][] = [
    ['missing accessKeyId', () => send(valid, { accessKeyId: undefined }), '900100'],
    ['wrong accessKeyId', () => send(valid, { accessKeyId: 'someone-else' }), '900101'],
    ['bad signature', () => send(valid, { signature: 'AAAA' }), '900102'],
    ['missing signature params (simple mode)', () => send(valid, { algorithm: undefined, signature: '' }), '900102'],
    ['stale timestamp', () => send(valid, { timestamp: String(Date.now() - 11 * 60 * 1000) }), '900103'],
    ['short nonce', () => send(valid, { nonce: 'abc' }), '900104'],
    ['unknown action', () => call(`/?${query('sms.message.fly')}`, { body: valid }), '900200'],
    ['body not JSON', () => call(`/?${query('sms.message.send')}`, { raw: '{nope' }), '900201'],
    ['body not an object', () => send([1, 2]), '900201'],
    ['GET instead of POST', () => call(`/?${query('sms.message.send')}`, { method: 'GET' }), '900202'],
    ['to missing', () => send({ signature: 'Acme', content: 'x' }), '900300'],
    ['to empty', () => send({ ...valid, to: [] }), '900300'],
    ['to not strings', () => send({ ...valid, to: [13800138000] }), '900300'],
    ['invalid number', () => send({ ...valid, to: ['12345'] }), '900301'],
    ['too many recipients', () => send({ ...valid, to: Array.from({ length: 1001 }, () => '+8613800138000') }), '900302'],
    ['voice to an array', () => voice({ to: ['13800138000'], code: '1234' }), '900302'],
    ['signature too short', () => send({ ...valid, signature: 'A' }), '900310'],
    ['signature too long', () => send({ ...valid, signature: 'A'.repeat(17) }), '900310'],
    ['both content and templateId', () => send({ ...valid, templateId: 'pub_verif_basic' }), '900311'],
    ['neither content nor templateId', () => send({ to: valid.to, signature: 'Acme' }), '900311'],
    ['empty content', () => send({ ...valid, content: '' }), '900312'],
    ['templateData with content', () => send({ ...valid, templateData: { code: '1' } }), '900313'],
    ['unknown template', () => send({ to: valid.to, signature: 'Acme', templateId: 'nope' }), '900314'],
    ['missing template variable', () => send({ to: valid.to, signature: 'Acme', templateId: 'pub_verif_ttl', templateData: { code: '1' } }), '900315'],
    ['non-string template value', () => send({ to: valid.to, signature: 'Acme', templateId: 'pub_verif_basic', templateData: { code: 1 } }), '900315'],
    ['voice code of 5 digits', () => voice({ to: '13800138000', code: '12345' }), '900320'],
    ['voice code with non-ASCII digits', () => voice({ to: '13800138000', code: '１２３４' }), '900320'],
  ];
  for (const [name, run, code] of cases) {
    it(`${name} → ${code}`, async () => {
      const answer = await run();
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ code, message: Object.values(SANDBOX_ERRORS).find((e) => e.code === code)?.message });
    });
  }

  it('counts the signature in code points, not UTF-16 units', async () => {
    const answer = await send({ ...valid, signature: '😀'.repeat(16) });
    expect(answer.status).toBe(200);
  });

  it('every sandbox code is unique and documented', () => {
    const codes = Object.values(SANDBOX_ERRORS).map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const e of Object.values(SANDBOX_ERRORS)) expect(e.meaning.length).toBeGreaterThan(10);
  });
});

describe('sandbox: admin routes', () => {
  it('GET stats and requests, with the key redacted and correlation ids kept', async () => {
    await call(`/?${query('sms.message.send')}`, {
      body: { to: ['+8613800138000'], signature: 'Acme', content: 'hi' },
      headers: { 'x-correlation-id': 'c-1' },
    });
    await send({ to: ['+8613800138000'], signature: 'A', content: 'hi' });
    const stats = await call('/_sandbox/stats', { method: 'GET' });
    expect(stats.body).toMatchObject({ requests: 2, acceptedSends: 1, byHttpStatus: { '200': 1, '400': 1 }, chargedAmount: '0.045000' });
    const requests = await call('/_sandbox/requests?correlationId=c-1', { method: 'GET' });
    expect(requests.body).toMatchObject({
      total: 2,
      entries: [{ seq: 1, action: 'sms.message.send', accessKeyId: 'REDACTED', correlationId: 'c-1', httpStatus: 200, answerCode: '0', accepted: true }],
    });
    expect(requests.raw).not.toContain(KEY_ID);
    expect(requests.raw).not.toContain(SECRET);
  });

  it('GET requests?bodies=false leaves the bodies out (what the benchmarks poll)', async () => {
    await call(`/?${query('sms.message.send')}`, {
      body: { to: ['+8613800138000'], signature: 'Acme', content: 'hi' },
      headers: { 'x-correlation-id': 'c-2' },
    });
    const brief = await call('/_sandbox/requests?correlationId=c-2&bodies=false', { method: 'GET' });
    expect(brief.body).toMatchObject({ entries: [{ correlationId: 'c-2', httpStatus: 200, accepted: true }] });
    const [entry] = (brief.body as { entries: Record<string, unknown>[] }).entries;
    expect(entry).not.toHaveProperty('body');
    expect(entry).not.toHaveProperty('rawBody');
    const full = await call('/_sandbox/requests?correlationId=c-2', { method: 'GET' });
    expect((full.body as { entries: Record<string, unknown>[] }).entries[0]).toHaveProperty('body');
  });

  it('POST balance sets it; a bad balance is refused', async () => {
    expect((await call('/_sandbox/balance', { body: { balance: '2.5' } })).body).toEqual({ balance: '2.500000' });
    expect(sandbox.state.balance).toBe('2.500000');
    const bad = await call('/_sandbox/balance', { body: { balance: '-1' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: '900400' });
    expect((await call('/_sandbox/balance', { method: 'GET' })).body).toEqual({ balance: '2.500000' });
  });

  it('POST faults enqueues faults for the next requests, with Retry-After on 503', async () => {
    const set = await call('/_sandbox/faults', { body: { enqueue: [{ kind: 'http503', count: 2 }], retryAfterSec: 7 } });
    expect(set.body).toMatchObject({ queued: ['http503', 'http503'], settings: { retryAfterSec: 7 } });
    const first = await send({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' });
    expect(first.status).toBe(503);
    expect(first.headers['retry-after']).toBe('7');
    expect(first.body).toEqual({ code: '900503', message: 'ServiceUnavailable' });
    expect((await send({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' })).status).toBe(503);
    expect((await send({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' })).status).toBe(200);
  });

  it('the down switch answers 503 until switched off', async () => {
    await call('/_sandbox/faults', { body: { down: true } });
    expect((await send({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' })).status).toBe(503);
    expect((await send({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' })).status).toBe(503);
    await call('/_sandbox/faults', { body: { down: false } });
    expect((await send({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' })).status).toBe(200);
    expect(sandbox.state.stats().faults).toEqual({ http503: 2 });
  });

  it('refuses invalid fault settings', async () => {
    const answer = await call('/_sandbox/faults', { body: { rates: { http500: 2 } } });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: '900400' });
  });

  it('GET correlations lists correlation ids accepted more than once', async () => {
    const body = { to: ['+8613800138000'], signature: 'Acme', content: 'hi' };
    for (const id of ['a', 'b', 'b']) {
      await call(`/?${query('sms.message.send')}`, { body, headers: { 'x-correlation-id': id } });
    }
    expect((await call('/_sandbox/correlations', { method: 'GET' })).body).toEqual({ counts: { b: 2 } });
    expect((await call('/_sandbox/correlations?min=1', { method: 'GET' })).body).toEqual({ counts: { a: 1, b: 2 } });
    expect(sandbox.state.stats()).toMatchObject({ duplicateCorrelationIds: 1, duplicateSends: 1 });
  });

  it('POST reset restores the initial balance and clears log, counters and faults', async () => {
    await send({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' });
    sandbox.setFaults({ down: true });
    const reset = await call('/_sandbox/reset', { body: {} });
    expect(reset.body).toEqual({ ok: true, balance: '10.000000' });
    expect(sandbox.state.stats()).toMatchObject({ requests: 0, acceptedSends: 0 });
    expect(sandbox.state.requests()).toEqual([]);
    expect(sandbox.state.faults.settings.down).toBe(false);
  });

  it('unknown admin routes are 404', async () => {
    const answer = await call('/_sandbox/nope', { method: 'GET' });
    expect(answer.status).toBe(404);
  });
});

describe('sandbox: bounded request log', () => {
  it('keeps only the last logCapacity entries while counters keep counting', async () => {
    const small = await startSandbox({ logCapacity: 3 });
    try {
      for (let i = 0; i < 5; i += 1) {
        await got.post(`${small.url}/?action=sms.message.send&accessKeyId=k`, {
          body: JSON.stringify({ to: ['+8613800138000'], signature: 'Acme', content: `n${i}` }),
          throwHttpErrors: false,
          retry: { limit: 0 },
        });
      }
      expect(small.state.stats()).toMatchObject({ requests: 5, acceptedSends: 5, logged: 3 });
      const seqs = small.state.requests().map((e) => e.seq);
      expect(seqs).toEqual([3, 4, 5]);
      expect(small.state.requests({ limit: 1 })[0]?.body).toMatchObject({ content: 'n4' });
    } finally {
      await small.close();
    }
  });
});

describe('sandbox: an account with text routes of its own (textRoutes)', () => {
  it('sends AU through its own upstream at its price, and answers 101301 for a region it has none for', async () => {
    const own = await startSandbox({ port: 0, textRoutes: { AU: { upstream: 'au.backup', price: '0.090000' }, SG: null } });
    try {
      const send = async (to: string) =>
        (await fetch(`${own.url}/?action=sms.message.send&accessKeyId=k`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ to: [to], signature: 'Acme', content: 'hi' }),
        }).then((r) => r.json())) as { code: string; data?: { messages: { upstream: string; price: string }[] } };
      const au = await send('+61412345678');
      expect(au.code).toBe('0');
      expect(au.data?.messages[0]).toMatchObject({ upstream: 'au.backup', price: '0.090000' });
      expect((await send('+6591234567')).code).toBe('101301');
      expect((await send('+8613800138000')).data?.messages[0]?.upstream).toBe('cn.cmpp.standard');
    } finally {
      await own.close();
    }
  });
});

describe('sandbox: several accounts at one URL, told apart by the access key id', () => {
  it('each account has its own balance, routes and request log; another key id is the main account', async () => {
    const service = await startSandbox({
      port: 0,
      accessKeyId: 'main-key',
      balance: '0.000000',
      accounts: [{ accessKeyId: 'backup-key', balance: '1.000000', textRoutes: { AU: { upstream: 'au.backup', price: '0.090000' } } }],
    });
    try {
      const send = async (keyId: string, to: string) =>
        (await fetch(`${service.url}/?action=sms.message.send&accessKeyId=${keyId}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-correlation-id': `${keyId}-${to}` },
          body: JSON.stringify({ to: [to], signature: 'Acme', content: 'hi' }),
        }).then((r) => r.json())) as { code: string; data?: { messages: { upstream: string; price: string }[] } };
      // main: empty, and no AU route.
      expect((await send('main-key', '+8613800138000')).code).toBe('105400');
      expect((await send('main-key', '+61412345678')).code).toBe('101301');
      // backup: funded, with an AU route of its own.
      const au = await send('backup-key', '+61412345678');
      expect(au.code).toBe('0');
      expect(au.data?.messages[0]).toMatchObject({ upstream: 'au.backup', price: '0.090000' });
      const backup = service.accounts.get('backup-key');
      expect(backup?.state.balance).toBe('0.910000');
      expect(backup?.state.requests().map((r) => r.correlationId)).toEqual(['backup-key-+61412345678']);
      expect(service.state.balance).toBe('0.000000');
      expect(service.state.requests()).toHaveLength(2);
      // An unknown key id is the main account's request, refused for its key.
      expect((await send('who-key', '+8613800138000')).code).toBe(SANDBOX_ERRORS.invalidAccessKeyId.code);
    } finally {
      await service.close();
    }
  });

  it('refuses accounts that share a key id, and more than 8', async () => {
    await expect(startSandbox({ port: 0, accessKeyId: 'k', accounts: [{ accessKeyId: 'k' }] })).rejects.toThrow(/key ids of their own/);
    await expect(startSandbox({ port: 0, accounts: [{ accessKeyId: '' }] })).rejects.toThrow(/key ids of their own/);
    await expect(startSandbox({ port: 0, accounts: Array.from({ length: 9 }, (_, i) => ({ accessKeyId: `k${i}` })) })).rejects.toThrow(/at most 8/);
  });
});
