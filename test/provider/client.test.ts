import http from 'node:http';
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { createProviderClient } from '../../src/provider/client.ts';
import type { AttemptInfo, ProviderClientOptions, RetryInfo } from '../../src/provider/options.ts';
import type { ProviderError } from '../../src/provider/provider-error.ts';
import type { ProviderClient, ProviderRequest } from '../../src/provider/types.ts';
import { eventually } from '../../tools/poll.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { failureOf } from '../helpers/provider.ts';

const KEY_ID = 'AKID-client-test-7f3a9c';
const SECRET = 'SECRET-client-test-e81b44d0';

const TEXT_MULTI: ProviderRequest = {
  operation: 'sms.message.send',
  body: { to: ['+8613800138000', '+85251234567', '+12025550123'], signature: 'Acme', content: 'Your code is 1234' },
};
const TEXT_ONE: ProviderRequest = {
  operation: 'sms.message.send',
  body: { to: ['+8613800138000'], signature: 'Acme', content: 'hello' },
};
const VOICE: ProviderRequest = { operation: 'sms.voice.verification.send', body: { to: '13800138000', code: '123456' } };

const sandbox = useSandbox({ accessKeyId: KEY_ID, accessKeySecret: SECRET, balance: '100.000000' }, { resetAfterEach: true });
const cleanups = useCleanups();

function client(overrides: Partial<ProviderClientOptions> = {}): ProviderClient {
  const created = createProviderClient({
    baseUrl: sandbox.url,
    accessKeyId: KEY_ID,
    accessKeySecret: SECRET,
    connectTimeoutMs: 500,
    responseTimeoutMs: 300,
    maxSockets: 8,
    retry: { maxAttempts: 3, budgetMs: 3_000, baseDelayMs: 10, maxDelayMs: 50, retryAmbiguous: false },
    ...overrides,
  });
  cleanups.add(() => created.close());
  return created;
}

/** A port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('provider client against the sandbox: successes', () => {
  it('sends a multi-region text and returns per-recipient reports with string amounts', async () => {
    const success = await client().send(TEXT_MULTI, { correlationId: 'cmd-1' });
    expect(success.attempts).toBe(1);
    expect(success.requestId).toMatch(/^[0-9a-f]+$/);
    const { result } = success;
    expect(result.recipients).toBe(3);
    expect(result.messages.map((m) => [m.to, m.regionCode, m.countryCode, m.upstream, m.price, m.status])).toEqual([
      ['+8613800138000', 'CN', '86', 'cn.cmpp.standard', '0.045000', 'sent'],
      ['+85251234567', 'HK', '852', 'apac.direct', '0.350000', 'sent'],
      ['+12025550123', 'US', '1', 'na.tollfree', '0.080000', 'sent'],
    ]);
    expect(result.totalAmount).toBe('0.475000');
    expect(result.payAmount).toBe('0.475000');
    expect(result.virtualAmount).toBe('0.000000');
    expect(typeof result.totalAmount).toBe('string');
    expect(sandbox.state.balance).toBe('99.525000');
    const [entry] = sandbox.state.requests();
    expect(entry?.correlationId).toBe('cmd-1');
    expect(entry?.accessKeyId).toBe('REDACTED');
    expect(sandbox.state.acceptedSends('cmd-1')).toBe(1);
  });

  it('sends by template', async () => {
    const { result } = await client().send({
      operation: 'sms.message.send',
      body: { to: ['+447400123456'], signature: 'Acme', templateId: 'pub_verif_ttl', templateData: { code: '4321', ttl: '5' } },
    });
    expect(result.messages[0]).toMatchObject({ regionCode: 'GB', messageCount: 1, price: '0.300000' });
  });

  it('sends a voice verification code', async () => {
    const { result } = await client().send(VOICE);
    expect(result).toMatchObject({ recipients: 1, messageCount: 1, totalAmount: '0.050000', virtualAmount: '0.000000' });
    expect(result.messages[0]).toMatchObject({ to: '+8613800138000', upstream: 'monyun.standard', price: '0.050000' });
  });

  it('reuses keep-alive connections', async () => {
    const c = client();
    for (let i = 0; i < 5; i += 1) await c.send(TEXT_ONE);
    expect(sandbox.state.stats().connections).toBe(1);
  });

  it('sends the headers the service expects', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const probe = http.createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          code: '0',
          message: 'Success',
          data: { recipients: 0, messageCount: 0, totalAmount: '0.000000', payAmount: '0.000000', virtualAmount: '0.000000', messages: [] },
        }),
      );
    });
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = probe.address() as net.AddressInfo;
      await client({ baseUrl: `http://127.0.0.1:${port}` }).send(TEXT_ONE, { correlationId: 'corr-h' });
      expect(seen[0]).toMatchObject({
        'content-type': 'application/json;charset=utf-8',
        accept: 'application/json',
        'x-correlation-id': 'corr-h',
      });
      expect(seen[0]?.['user-agent']).toMatch(/^sms-worker\/\d+\.\d+\.\d+/);
    } finally {
      await new Promise<void>((resolve) => probe.close(() => resolve()));
    }
  });

  it('reports every attempt through onAttempt', async () => {
    const attempts: AttemptInfo[] = [];
    await client({ onAttempt: (info) => attempts.push(info) }).send(TEXT_ONE);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ operation: 'sms.message.send', attempt: 1, outcome: 'success' });
  });
});

describe('provider client: business failures are never retried', () => {
  it('105400 insufficient funds: one request, nothing charged', async () => {
    sandbox.state.setBalance('0.010000');
    const error = await failureOf(client().send(TEXT_MULTI));
    expect(error).toMatchObject({
      code: '105400',
      failureClass: 'insufficient-funds',
      retryable: false,
      attempts: 1,
      httpStatus: 400,
      providerMessage: 'InsufficientFunds',
    });
    expect(error.requestId).toBeDefined();
    expect(sandbox.state.requests()).toHaveLength(1);
    expect(sandbox.state.balance).toBe('0.010000');
  });

  it('101301 for a voice call to an international number', async () => {
    const error = await failureOf(client().send({ operation: 'sms.voice.verification.send', body: { to: '+447400123456', code: '1234' } }));
    expect(error).toMatchObject({ code: '101301', failureClass: 'configuration', retryable: false, attempts: 1 });
    expect(error.providerMessage).toBe('未设置有效的上游服务商');
    expect(sandbox.state.requests()).toHaveLength(1);
  });

  it('a sandbox validation code is a generic business failure, one request', async () => {
    const error = await failureOf(client().send({ operation: 'sms.message.send', body: { to: ['+8613800138000'], signature: 'A', content: 'x' } }));
    expect(error).toMatchObject({ code: '900310', failureClass: 'business', retryable: false, attempts: 1 });
    expect(sandbox.state.requests()).toHaveLength(1);
  });
});

describe('provider client: retries', () => {
  it('retries after a 503 and succeeds (two requests in the sandbox log)', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'http503' }], retryAfterSec: 0 });
    const retries: RetryInfo[] = [];
    const attempts: AttemptInfo[] = [];
    const success = await client({ onRetry: (info) => retries.push(info), onAttempt: (info) => attempts.push(info) }).send(TEXT_ONE, {
      correlationId: 'cmd-503',
    });
    expect(success.attempts).toBe(2);
    expect(sandbox.state.requests({ correlationId: 'cmd-503' }).map((e) => e.httpStatus)).toEqual([503, 200]);
    expect(retries).toEqual([expect.objectContaining({ attempt: 1, failureClass: 'throttled', code: 'PROVIDER_UNAVAILABLE' })]);
    expect(attempts.map((a) => a.outcome)).toEqual(['throttled', 'success']);
  });

  it("a call's own onAttempt sees each of its attempts after the client's, with status and request id; a throwing one changes nothing", async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'http503' }], retryAfterSec: 0 });
    const order: string[] = [];
    const mine: AttemptInfo[] = [];
    const success = await client({ onAttempt: (info) => order.push(`client ${info.attempt}`) }).send(TEXT_ONE, {
      correlationId: 'cmd-observed',
      onAttempt: (info) => {
        order.push(`call ${info.attempt}`);
        mine.push(info);
        throw new Error('an observer bug');
      },
    });
    expect(success.attempts).toBe(2);
    expect(order).toEqual(['client 1', 'call 1', 'client 2', 'call 2']);
    expect(mine.map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([
      [1, 'throttled', 503],
      [2, 'success', 200],
    ]);
    // Each answer's own x-uni-request-id: the success's is the one the result keeps.
    expect(mine[0]?.requestId).toEqual(expect.any(String));
    expect(mine[0]?.requestId).not.toBe(mine[1]?.requestId);
    expect(mine[1]?.requestId).toBe(success.requestId);
  });

  it('each attempt is signed afresh (a new nonce per retry)', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'http500' }] });
    await client({ retry: { maxAttempts: 3, budgetMs: 3_000, baseDelayMs: 10, maxDelayMs: 50, retryAmbiguous: true } }).send(TEXT_ONE);
    expect(sandbox.state.requests().map((e) => e.httpStatus)).toEqual([500, 200]);
  });

  it("honours Retry-After on 429: the retry is scheduled the answer's 1 s later (not the 10-50 ms backoff) and made only then", async () => {
    // got waits on a timer between attempts: faked here, so the test moves the clock instead of waiting.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    cleanups.add(() => vi.useRealTimers());
    sandbox.setFaults({ enqueue: [{ kind: 'http429' }], retryAfterSec: 1 });
    const retries: RetryInfo[] = [];
    const sending = client({ onRetry: (info) => retries.push(info) }).send(TEXT_ONE);
    await eventually(() => retries.length === 1, 5_000, 'the retry to be scheduled');
    expect(retries.map((r) => [r.attempt, r.failureClass, r.delayMs])).toEqual([[1, 'throttled', 1_000]]);
    await vi.advanceTimersByTimeAsync(999);
    expect(sandbox.state.requests().map((r) => r.httpStatus)).toEqual([429]);
    await vi.advanceTimersByTimeAsync(1);
    expect((await sending).attempts).toBe(2);
    expect(sandbox.state.requests().map((r) => r.httpStatus)).toEqual([429, 200]);
  });

  it('fails with the throttled error when Retry-After does not fit the budget', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'http429' }], retryAfterSec: 5 });
    const error = await failureOf(client().send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'throttled', code: 'PROVIDER_THROTTLED', retryAfterMs: 5_000, attempts: 1, retryable: true });
    expect(error.message).toContain('Retry-After exceeds the remaining retry budget');
    expect(sandbox.state.requests()).toHaveLength(1);
  });

  it('gives up after maxAttempts on a service that stays down', async () => {
    sandbox.setFaults({ down: true, retryAfterSec: 0 });
    const error = await failureOf(client().send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'throttled', code: 'PROVIDER_UNAVAILABLE', attempts: 3, httpStatus: 503 });
    expect(sandbox.state.requests()).toHaveLength(3);
  });
});

describe('provider client: ambiguous and transport failures', () => {
  it('a hang is an ambiguous timeout, not retried by default', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'hang' }] });
    const error = await failureOf(client().send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'ambiguous', code: 'PROVIDER_TIMEOUT', attempts: 1, retryable: false });
    expect(error.ambiguous).toBe(true);
    expect(error.message).toContain('ambiguous');
    expect(sandbox.state.requests()).toHaveLength(1);
  });

  it('a hang is retried when retryAmbiguous is true', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'hang' }] });
    const success = await client({
      retry: { maxAttempts: 3, budgetMs: 3_000, baseDelayMs: 10, maxDelayMs: 50, retryAmbiguous: true },
    }).send(TEXT_ONE);
    expect(success.attempts).toBe(2);
    expect(sandbox.state.requests()).toHaveLength(2);
  });

  it('a processed-then-lost answer retried under retryAmbiguous is a duplicate the sandbox counts', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'hang-after' }] });
    await client({ retry: { maxAttempts: 2, budgetMs: 3_000, baseDelayMs: 10, maxDelayMs: 50, retryAmbiguous: true } }).send(TEXT_ONE, {
      correlationId: 'dup-1',
    });
    expect(sandbox.state.acceptedSends('dup-1')).toBe(2);
    expect(sandbox.state.stats().duplicateCorrelationIds).toBe(1);
  });

  it.each(['http503', 'http500'] as const)(
    'retried after an ambiguous attempt, a call whose last attempt got %s is still ambiguous: an earlier request may have reached the service',
    async (last) => {
      sandbox.setFaults({ enqueue: [{ kind: 'hang-after' }, { kind: last }, { kind: last }], retryAfterSec: 0 });
      const error = await failureOf(
        client({ retry: { maxAttempts: 2, budgetMs: 3_000, baseDelayMs: 10, maxDelayMs: 50, retryAmbiguous: true } }).send(TEXT_ONE, {
          correlationId: `amb-${last}`,
        }),
      );
      expect(error).toMatchObject({ failureClass: last === 'http503' ? 'throttled' : 'ambiguous', attempts: 2, earlierAttemptAmbiguous: true });
      expect([error.ambiguous, error.surelyNotSent, error.refused]).toEqual([true, false, false]);
      expect(sandbox.state.acceptedSends(`amb-${last}`)).toBe(1);
    },
  );

  it('a call that never got an ambiguous answer is not made ambiguous by its retries (503, then 503)', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'http503' }, { kind: 'http503' }], retryAfterSec: 0 });
    const error = await failureOf(client({ retry: { maxAttempts: 2, budgetMs: 3_000, baseDelayMs: 10, maxDelayMs: 50, retryAmbiguous: true } }).send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'throttled', attempts: 2, earlierAttemptAmbiguous: false });
    expect([error.ambiguous, error.surelyNotSent]).toEqual([false, true]);
  });

  it('a connection reset is ambiguous', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'reset' }] });
    const error = await failureOf(client().send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'ambiguous', code: 'PROVIDER_CONNECTION_RESET', attempts: 1 });
  });

  it('a refused connection is transport, retried, then fails retryable', async () => {
    const port = await closedPort();
    const retries: RetryInfo[] = [];
    const error = await failureOf(client({ baseUrl: `http://127.0.0.1:${port}`, onRetry: (r) => retries.push(r) }).send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'transport', code: 'PROVIDER_CONNECTION_FAILED', attempts: 3, retryable: true });
    expect(retries).toHaveLength(2);
    expect(error.message).toContain('retry attempts exhausted');
  });

  it('a malformed (non-JSON) 200 is malformed and not retried', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'malformed' }] });
    const error = await failureOf(client().send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'malformed', code: 'PROVIDER_MALFORMED_RESPONSE', attempts: 1, retryable: false });
    expect(sandbox.state.requests()).toHaveLength(1);
  });

  it('a 200 with code "0" but no data is malformed', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'missing-data' }] });
    const error = await failureOf(client().send(TEXT_ONE));
    expect(error).toMatchObject({ failureClass: 'malformed', httpStatus: 200 });
    expect(error.message).toContain('without data');
  });

  it('an abort by the caller ends the call with PROVIDER_ABORTED', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'hang' }] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await failureOf(client({ responseTimeoutMs: 5_000 }).send(TEXT_ONE, { signal: controller.signal }));
    expect(error).toMatchObject({ code: 'PROVIDER_ABORTED', failureClass: 'ambiguous', retryable: false });
  });
});

describe('provider client: authentication and secrets', () => {
  it('HMAC-signed requests are accepted (the sandbox verifies every one)', async () => {
    await client().send(TEXT_ONE);
    expect(sandbox.state.requests()[0]?.httpStatus).toBe(200);
  });

  it('a wrong secret is rejected as a business failure', async () => {
    const error = await failureOf(client({ accessKeySecret: 'SECRET-wrong-0000' }).send(TEXT_ONE));
    expect(error).toMatchObject({ code: '900102', failureClass: 'business', attempts: 1 });
  });

  it('a missing secret (simple mode) is rejected by an HMAC sandbox', async () => {
    const error = await failureOf(client({ accessKeySecret: undefined }).send(TEXT_ONE));
    expect(error.code).toBe('900102');
  });

  it('no error exposes the access key id or secret', async () => {
    const port = await closedPort();
    const errors: ProviderError[] = [];
    errors.push(await failureOf(client({ accessKeySecret: 'SECRET-wrong-0000' }).send(TEXT_ONE)));
    sandbox.setFaults({ enqueue: [{ kind: 'hang' }] });
    errors.push(await failureOf(client().send(TEXT_ONE)));
    sandbox.setFaults({ enqueue: [{ kind: 'http500' }] });
    errors.push(await failureOf(client().send(TEXT_ONE)));
    sandbox.setFaults({ enqueue: [{ kind: 'reset' }] });
    errors.push(await failureOf(client().send(TEXT_ONE)));
    errors.push(await failureOf(client({ baseUrl: `http://127.0.0.1:${port}` }).send(TEXT_ONE)));
    sandbox.state.setBalance('0');
    errors.push(await failureOf(client().send(TEXT_ONE)));
    expect(errors.map((e) => e.failureClass)).toEqual(['business', 'ambiguous', 'ambiguous', 'ambiguous', 'transport', 'insufficient-funds']);
    for (const error of errors) {
      const views = [
        error.message,
        error.stack ?? '',
        String(error),
        JSON.stringify(error),
        JSON.stringify(Object.entries(error)),
        String(error.cause),
        JSON.stringify({ ...error }),
      ];
      for (const view of views) {
        expect(view).not.toContain(KEY_ID);
        expect(view).not.toContain(SECRET);
        expect(view).not.toContain('SECRET-wrong-0000');
        expect(view).not.toContain('accessKeyId=');
      }
      expect(error.cause).toBeUndefined();
    }
  });

  it('scrubs credentials a service echoes back in its message', async () => {
    // A deliberately careless service: it repeats the whole request URL in its error message.
    const echo = http.createServer((req, res) => {
      res.writeHead(400, { 'content-type': 'application/json', 'x-uni-request-id': 'echo-1' });
      res.end(JSON.stringify({ code: '900101', message: `bad key, you sent ${req.url ?? ''}` }));
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = echo.address() as net.AddressInfo;
      const error = await failureOf(client({ baseUrl: `http://127.0.0.1:${port}` }).send(TEXT_ONE));
      expect(error.code).toBe('900101');
      expect(error.providerMessage).toContain('accessKeyId=REDACTED');
      for (const view of [error.message, error.providerMessage, JSON.stringify(error), error.stack ?? '']) {
        expect(view).not.toContain(KEY_ID);
        expect(view).not.toContain(SECRET);
      }
    } finally {
      await new Promise<void>((resolve) => echo.close(() => resolve()));
    }
  });
});

describe('provider client options', () => {
  it('rejects invalid options with every problem listed', () => {
    expect(() => createProviderClient({ baseUrl: 'not a url', accessKeyId: '', retry: { maxAttempts: 0 } })).toThrowError(
      /baseUrl is not a valid URL[\s\S]*accessKeyId must not be empty[\s\S]*retry.maxAttempts/,
    );
  });
});
