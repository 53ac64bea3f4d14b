// The report endpoint over real loopback HTTP, with the publish step given as a function (the
// Kafka side is covered by receiver.int.test.ts against the real broker).
import got, { type Response } from 'got';
import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReceiverCredentials } from '../../src/receipts/auth.ts';
import { createReceiverMetrics } from '../../src/receipts/metrics.ts';
import type { DeliveryReceipt } from '../../src/receipts/report.ts';
import { startReportServer, type RunningReportServer } from '../../src/receipts/server.ts';

const TOKEN = 'tok_0123456789abcdef';
const PASSWORD = 'a-long-password-123';

interface Harness {
  server: RunningReportServer;
  published: DeliveryReceipt[][];
  logs: string[];
  metrics: ReturnType<typeof createReceiverMetrics>;
}

let current: Harness | undefined;
afterEach(async () => {
  await current?.server.close(1_000);
  current = undefined;
});

async function start(
  options: { credentials?: ReceiverCredentials; publish?: (r: readonly DeliveryReceipt[]) => Promise<void>; maxBodyBytes?: number; burst?: number } = {},
): Promise<Harness> {
  const published: DeliveryReceipt[][] = [];
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const metrics = createReceiverMetrics();
  const server = await startReportServer({
    host: '127.0.0.1',
    port: 0,
    path: '/receipts',
    credentials: options.credentials ?? { pathToken: TOKEN },
    maxBodyBytes: options.maxBodyBytes ?? 4_096,
    maxReports: 10,
    rateLimit: { perSecond: 1, burst: options.burst ?? 1_000, maxSources: 100 },
    trustedProxyHops: 0,
    publish:
      options.publish ??
      (async (receipts) => {
        published.push([...receipts]);
      }),
    metrics,
    logger: pino({ level: 'trace' }, sink),
  });
  current = { server, published, logs, metrics };
  return current;
}

function post(url: string, body: string | unknown, headers: Record<string, string> = {}): Promise<Response<string>> {
  return got.post(url, {
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
    throwHttpErrors: false,
    retry: { limit: 0 },
  });
}

const report = { id: 'm-1', status: 'delivered', regionCode: 'CN', submitDate: '2026-11-23T10:00:00Z', doneDate: '2026-11-23T10:00:03Z' };

async function metric(h: Harness, name: string): Promise<string> {
  const text = await h.metrics.registry.metrics();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name))
    .join('\n');
}

describe('report endpoint', () => {
  it('answers 200 after publishing one receipt per report, and counts them', async () => {
    const h = await start();
    const answer = await post(`${h.server.url}/receipts/${TOKEN}`, [report, { ...report, id: 'm-2', status: 'failed' }]);
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ code: '0', message: 'Success', received: 2 });
    expect(h.published.map((batch) => batch.map((r) => r.messageId))).toEqual([['m-1', 'm-2']]);
    expect(await metric(h, 'sms_receipts_receipts_total')).toContain('sms_receipts_receipts_total{status="delivered",region="CN"} 1');
    expect(await metric(h, 'sms_receipts_delivery_seconds_count')).toContain('sms_receipts_delivery_seconds_count{outcome="DELIVERED"} 1');
  });

  it('answers 401 with one constant message for a wrong, missing or extra credential, and publishes nothing', async () => {
    const h = await start();
    const answers = await Promise.all([
      post(`${h.server.url}/receipts/wrong-token-0123456789`, report),
      post(`${h.server.url}/receipts`, report),
      post(`${h.server.url}/receipts/${TOKEN.slice(0, -1)}`, report),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([401, 401, 401]);
    expect(new Set(answers.map((a) => a.body))).toEqual(new Set(['{"code":"UNAUTHORIZED","message":"unauthorized"}']));
    expect(h.published).toEqual([]);
    expect(await metric(h, 'sms_receipts_rejected_total{reason="unauthorized"}')).toContain(' 3');
  });

  it('with basic auth, challenges and accepts the right user and password only', async () => {
    const h = await start({ credentials: { basic: { username: 'svc', password: PASSWORD } } });
    const wrong = await post(`${h.server.url}/receipts`, report, { authorization: `Basic ${Buffer.from('svc:nope').toString('base64')}` });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['www-authenticate']).toContain('Basic');
    const right = await post(`${h.server.url}/receipts`, report, { authorization: `Basic ${Buffer.from(`svc:${PASSWORD}`).toString('base64')}` });
    expect(right.statusCode).toBe(200);
  });

  it('answers 413 to a body over the limit, declared or not, and publishes nothing', async () => {
    const h = await start({ maxBodyBytes: 2_048 });
    const big = JSON.stringify([{ ...report, errorMessage: 'x'.repeat(3_000) }]);
    const declared = await post(`${h.server.url}/receipts/${TOKEN}`, big);
    expect(declared.statusCode).toBe(413);
    const chunked = await got.post(`${h.server.url}/receipts/${TOKEN}`, {
      body: (async function* () {
        yield Buffer.from(big);
      })(),
      throwHttpErrors: false,
      retry: { limit: 0 },
    });
    expect(chunked.statusCode).toBe(413);
    expect(h.published).toEqual([]);
  });

  it('answers 400 naming the field, or saying the body is not JSON', async () => {
    const h = await start();
    const bad = await post(`${h.server.url}/receipts/${TOKEN}`, [report, { ...report, price: 'free' }]);
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ code: 'INVALID_REPORT', field: '[1].price' });
    const notJson = await post(`${h.server.url}/receipts/${TOKEN}`, '{"id":');
    expect(notJson.statusCode).toBe(400);
    expect(JSON.parse(notJson.body)).toMatchObject({ code: 'MALFORMED_JSON' });
    expect(h.published).toEqual([]);
  });

  it('answers 503 with Retry-After when publishing fails, logging the reason but no secret', async () => {
    const h = await start({
      publish: () => Promise.reject(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9')),
    });
    const answer = await post(`${h.server.url}/receipts/${TOKEN}`, report);
    expect(answer.statusCode).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect(h.logs.join('')).toContain('ECONNREFUSED');
    expect(h.logs.join('')).not.toContain(TOKEN);
  });

  it('rate-limits a flood per source with 429 before looking at credentials', async () => {
    const h = await start({ burst: 2 });
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push((await post(`${h.server.url}/receipts/wrong-token-0123456789`, report)).statusCode);
    expect(answers).toEqual([401, 401, 429, 429]);
  });

  it('shrugs off a client that cuts the connection mid-body: nothing published, no error logged, next post fine', async () => {
    const h = await start();
    const { port } = new URL(h.server.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(`POST /receipts/${TOKEN} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"id":"m-1",`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    const next = await post(`${h.server.url}/receipts/${TOKEN}`, report);
    expect(next.statusCode).toBe(200);
    expect(h.published).toHaveLength(1);
    expect(h.logs.join('')).not.toContain('"level":50');
  });

  it('answers 405 to other methods and 404 to other paths', async () => {
    const h = await start();
    const get = await got(`${h.server.url}/receipts/${TOKEN}`, { throwHttpErrors: false, retry: { limit: 0 } });
    expect(get.statusCode).toBe(405);
    expect((await post(`${h.server.url}/metrics`, report)).statusCode).toBe(404);
  });

  it('never logs the path token, the basic password or report contents', async () => {
    const h = await start({ credentials: { pathToken: TOKEN, basic: { username: 'svc', password: PASSWORD } } });
    const auth = { authorization: `Basic ${Buffer.from(`svc:${PASSWORD}`).toString('base64')}` };
    await post(`${h.server.url}/receipts/${TOKEN}`, { ...report, to: '+8613800138000' }, auth);
    await post(`${h.server.url}/receipts/${TOKEN}x`, report, auth);
    await post(`${h.server.url}/receipts/${TOKEN}`, { ...report, to: '+8613800138000', price: 'x' }, auth);
    const text = h.logs.join('');
    expect(h.logs.length).toBeGreaterThan(0);
    for (const secret of [TOKEN, PASSWORD, Buffer.from(`svc:${PASSWORD}`).toString('base64'), '+8613800138000']) expect(text).not.toContain(secret);
  });
});
