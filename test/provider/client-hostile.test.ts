/**
 * The client against hostile or broken answers, over real HTTP on loopback (small node:http
 * servers written for each case, and the sandbox): bodies over the byte cap, answers that never
 * end, deadlines, close() during a call, idle keep-alive sockets, and where defaults come from.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import http from 'node:http';
import type net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { envSchema, PROVIDER_DEFAULTS } from '../../src/config/schema.ts';
import { createProviderClient } from '../../src/provider/client.ts';
import { resolveProviderOptions } from '../../src/provider/options.ts';
import type { ProviderClientOptions, RetryInfo } from '../../src/provider/options.ts';
import type { ProviderClient, ProviderRequest } from '../../src/provider/types.ts';
import { eventually } from '../../tools/poll.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { failureOf } from '../helpers/provider.ts';

const TEXT: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+8613800138000'], signature: 'Acme', content: 'hello' } };
const KEY_ID = 'AKID-hostile-test-19c2';

const sandbox = useSandbox({ faults: { retryAfterSec: 0 } }, { resetAfterEach: true });
const cleanups = useCleanups();

function client(baseUrl: string, overrides: Partial<ProviderClientOptions> = {}): ProviderClient {
  const created = createProviderClient({
    baseUrl,
    accessKeyId: KEY_ID,
    connectTimeoutMs: 500,
    responseTimeoutMs: 2_000,
    maxSockets: 4,
    retry: { maxAttempts: 3, budgetMs: 3_000, baseDelayMs: 10, maxDelayMs: 50, retryAmbiguous: true },
    ...overrides,
  });
  cleanups.add(() => created.close());
  return created;
}

/** A loopback server with the given handler; resolves to its base URL. */
async function serve(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  cleanups.add(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/**
 * Streams `totalBytes` of a JSON-looking body in 64 KiB chunks, honouring back-pressure, and
 * records how much it managed to write before the client went away.
 */
function streamingServer(totalBytes: number, options: { contentLength: boolean; status?: number }) {
  const stats = { requests: 0, written: 0, finished: false };
  const handler: http.RequestListener = (req, res) => {
    stats.requests += 1;
    req.resume();
    res.writeHead(options.status ?? 200, { 'content-type': 'application/json', ...(options.contentLength ? { 'content-length': String(totalBytes) } : {}) });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = (): void => {
      while (stats.written < totalBytes && !res.destroyed) {
        const size = Math.min(chunk.length, totalBytes - stats.written);
        stats.written += size;
        if (!res.write(chunk.subarray(0, size))) {
          res.once('drain', pump);
          return;
        }
      }
      if (!res.destroyed) {
        stats.finished = true;
        res.end();
      }
    };
    res.on('error', () => undefined);
    pump();
  };
  return { stats, handler };
}

const TWENTY_MB = 20 * 1024 * 1024;

describe('provider client: answer size is capped', () => {
  it('a 20 MB chunked answer is malformed (PROVIDER_RESPONSE_TOO_LARGE), not retried, and not read to the end', async () => {
    const { stats, handler } = streamingServer(TWENTY_MB, { contentLength: false });
    const url = await serve(handler);
    const error = await failureOf(client(url, { maxResponseBytes: 100_000 }).send(TEXT));
    expect(error).toMatchObject({
      failureClass: 'malformed',
      code: 'PROVIDER_RESPONSE_TOO_LARGE',
      httpStatus: 200,
      answered: true,
      retryable: false,
      attempts: 1,
    });
    expect(error.message).toMatch(/100000-byte limit/);
    expect(stats.requests).toBe(1);
    // The client stopped reading: the server could not push the whole 20 MB into the socket.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stats.finished).toBe(false);
    expect(stats.written).toBeLessThan(TWENTY_MB / 2);
  });

  it('an answer whose Content-Length is over the cap is refused before its body is read, whatever its status', async () => {
    for (const status of [200, 503]) {
      const { stats, handler } = streamingServer(TWENTY_MB, { contentLength: true, status });
      const url = await serve(handler);
      const error = await failureOf(client(url, { maxResponseBytes: 100_000 }).send(TEXT));
      expect(error, String(status)).toMatchObject({ failureClass: 'malformed', code: 'PROVIDER_RESPONSE_TOO_LARGE', httpStatus: status, attempts: 1 });
      expect(stats.requests).toBe(1);
      expect(stats.finished).toBe(false);
    }
  });

  it('an answer just under the cap is read and judged as usual', async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: '100001', message: 'm'.repeat(50_000) }));
    });
    const error = await failureOf(client(url, { maxResponseBytes: 100_000 }).send(TEXT));
    expect(error).toMatchObject({ failureClass: 'business', code: '100001', attempts: 1 });
    // The service's 50,000-character message is cut to 1,000 characters.
    expect(error.providerMessage.length).toBeLessThanOrEqual(1_000);
    expect(error.message.length).toBeLessThan(1_500);
  });

  it("the default cap is PROVIDER_MAX_RESPONSE_BYTES's default", () => {
    expect(resolveProviderOptions({ baseUrl: 'http://127.0.0.1:1', accessKeyId: 'k' }).maxResponseBytes).toBe(
      envSchema.shape.PROVIDER_MAX_RESPONSE_BYTES.parse(undefined),
    );
  });
});

describe('provider client: an answer that never ends', () => {
  it('ends at the response timeout (read phase), as an ambiguous timeout, however long it keeps dripping', async () => {
    // got's timeouts and the server's drip run on timers: faked, so the test moves the clock.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    cleanups.add(() => vi.useRealTimers());
    let drips = 0;
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"code":"0",');
      const drip = setInterval(() => {
        drips += 1;
        res.write(' ');
      }, 20);
      res.on('close', () => clearInterval(drip));
    });
    // The read timeout starts when the client has the answer's head: the clock moves only after that.
    const heads = { count: 0 };
    const onHead = (): void => void (heads.count += 1);
    diagnostics_channel.subscribe('http.client.response.finish', onHead);
    cleanups.add(() => diagnostics_channel.unsubscribe('http.client.response.finish', onHead));
    let settled = false;
    const failing = failureOf(client(url, { responseTimeoutMs: 300, retry: { maxAttempts: 1 } }).send(TEXT)).finally(() => (settled = true));
    await eventually(() => heads.count === 1, 5_000, "the answer's head");

    await vi.advanceTimersByTimeAsync(299);
    expect(drips).toBe(14);
    expect(settled).toBe(false);
    // At 300 ms the read timeout fires; got destroys the request on the timer turn after it.
    await vi.advanceTimersByTimeAsync(2);
    const error = await failing;
    expect(error).toMatchObject({ failureClass: 'ambiguous', code: 'PROVIDER_TIMEOUT', attempts: 1 });
    expect(error.message).toMatch(/read phase/);
  });
});

describe('provider client: the deadline', () => {
  it('makes no retry that would start after the deadline (a 503 asking for 1 s, the command expiring in 300 ms)', async () => {
    let requests = 0;
    const url = await serve((req, res) => {
      requests += 1;
      req.resume();
      res.writeHead(503, { 'retry-after': '1' });
      res.end();
    });
    const error = await failureOf(client(url).send(TEXT, { deadline: Date.now() + 300 }));
    expect(error).toMatchObject({ failureClass: 'throttled', stopReason: 'deadline', attempts: 1, surelyNotSent: true });
    expect(error.message).toMatch(/expires before a retry/);
    expect(requests).toBe(1);
  });

  it('without a deadline the same answer stops on the budget instead', async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(503, { 'retry-after': '10' });
      res.end();
    });
    const error = await failureOf(client(url).send(TEXT));
    expect(error).toMatchObject({ failureClass: 'throttled', stopReason: 'retry-after-exceeds-budget', retryAfterMs: 10_000, attempts: 1 });
  });

  it('stops backoff retries at the deadline', async () => {
    let requests = 0;
    const url = await serve((req, res) => {
      requests += 1;
      req.resume();
      res.writeHead(503);
      res.end();
    });
    // Every backoff is 0.99 × 1 s; the deadline is 200 ms away.
    const c = client(url, { random: () => 0.99, retry: { maxAttempts: 5, budgetMs: 10_000, baseDelayMs: 1_000, maxDelayMs: 1_000 } });
    const error = await failureOf(c.send(TEXT, { deadline: Date.now() + 200 }));
    expect(error).toMatchObject({ stopReason: 'deadline', attempts: 1 });
    expect(requests).toBe(1);
  });
});

describe('provider client: where the failure happened', () => {
  it('a 5xx answer was answered by the service; a refused connection was not', async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(500);
      res.end('oops');
    });
    expect(await failureOf(client(url, { retry: { maxAttempts: 1 } }).send(TEXT))).toMatchObject({
      failureClass: 'ambiguous',
      httpStatus: 500,
      answered: true,
    });
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(await failureOf(client(`http://127.0.0.1:${port}`, { retry: { maxAttempts: 1 } }).send(TEXT))).toMatchObject({
      failureClass: 'transport',
      answered: false,
    });
  });

  it('401 without an envelope (a revoked key) is configuration, not retried', async () => {
    let requests = 0;
    const url = await serve((req, res) => {
      requests += 1;
      req.resume();
      res.writeHead(401, { 'content-type': 'text/html' });
      res.end('<html>Unauthorized</html>');
    });
    expect(await failureOf(client(url).send(TEXT))).toMatchObject({ failureClass: 'configuration', code: 'PROVIDER_HTTP_401', retryable: false, attempts: 1 });
    expect(requests).toBe(1);
  });
});

describe('provider client: close()', () => {
  it('aborts a call in flight with PROVIDER_ABORTED, and later calls fail at once without a request', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'hang' }] });
    const c = client(sandbox.url);
    const pending = failureOf(c.send(TEXT, { correlationId: 'close-1' }));
    await eventually(() => sandbox.state.requests({ correlationId: 'close-1' }).length === 1, 5_000, 'the request');
    c.close();
    const error = await pending;
    expect(error).toMatchObject({ code: 'PROVIDER_ABORTED', aborted: true, retryable: false, attempts: 1 });

    const after = await failureOf(c.send(TEXT, { correlationId: 'close-2' }));
    expect(after).toMatchObject({ code: 'PROVIDER_ABORTED', aborted: true, attempts: 0 });
    expect(sandbox.state.requests({ correlationId: 'close-2' })).toHaveLength(0);
  });

  it('aborts a call waiting between retries, without another request', async () => {
    // got waits on a timer between attempts: faked, so the test moves the clock past the retry time.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    cleanups.add(() => vi.useRealTimers());
    sandbox.setFaults({ enqueue: [{ kind: 'http503' }], retryAfterSec: 1 });
    const retries: RetryInfo[] = [];
    const c = client(sandbox.url, { retry: { maxAttempts: 3, budgetMs: 5_000 }, onRetry: (info) => retries.push(info) });
    const pending = failureOf(c.send(TEXT, { correlationId: 'close-3' }));
    await eventually(() => retries.length === 1, 5_000, 'the retry to be scheduled');
    expect(retries[0]?.delayMs).toBe(1_000);
    c.close();
    expect(await pending).toMatchObject({ code: 'PROVIDER_ABORTED', aborted: true });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sandbox.state.requests({ correlationId: 'close-3' })).toHaveLength(1);
  });
});

describe('provider client: idle keep-alive sockets', () => {
  it('closes a socket idle for longer than freeSocketTimeoutMs, so the next request opens a new one', async () => {
    const c = client(sandbox.url, { freeSocketTimeoutMs: 100 });
    await c.send(TEXT);
    await c.send(TEXT);
    expect(sandbox.state.stats().connections).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await c.send(TEXT);
    expect(sandbox.state.stats().connections).toBe(2);
  });

  it("by default idle sockets are closed after 4 s, below Node's (5 s) and nginx's (75 s) server keep-alive timeouts", () => {
    expect(resolveProviderOptions({ baseUrl: 'http://127.0.0.1:1', accessKeyId: 'k' }).freeSocketTimeoutMs).toBe(4_000);
    expect(PROVIDER_DEFAULTS.freeSocketTimeoutMs).toBeLessThan(new http.Server().keepAliveTimeout);
  });
});

describe('provider defaults have one source', () => {
  it("the client's defaults are the worker's (src/config/schema.ts)", () => {
    const resolved = resolveProviderOptions({ baseUrl: 'http://127.0.0.1:1', accessKeyId: 'k' });
    const env = envSchema
      .pick({
        PROVIDER_CONNECT_TIMEOUT_MS: true,
        PROVIDER_RESPONSE_TIMEOUT_MS: true,
        PROVIDER_RETRY_ATTEMPTS: true,
        PROVIDER_RETRY_BUDGET_MS: true,
        PROVIDER_RETRY_BASE_MS: true,
        PROVIDER_RETRY_MAX_DELAY_MS: true,
        PROVIDER_RETRY_AMBIGUOUS: true,
        MAX_IN_FLIGHT: true,
      })
      .parse({});
    expect(resolved).toMatchObject({
      connectTimeoutMs: env.PROVIDER_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: env.PROVIDER_RESPONSE_TIMEOUT_MS,
      maxSockets: env.MAX_IN_FLIGHT,
      retry: {
        maxAttempts: env.PROVIDER_RETRY_ATTEMPTS,
        budgetMs: env.PROVIDER_RETRY_BUDGET_MS,
        baseDelayMs: env.PROVIDER_RETRY_BASE_MS,
        maxDelayMs: env.PROVIDER_RETRY_MAX_DELAY_MS,
        retryAmbiguous: env.PROVIDER_RETRY_AMBIGUOUS,
      },
    });
  });
});
