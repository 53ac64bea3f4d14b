import http from 'node:http';
import type { AddressInfo } from 'node:net';
import got from 'got';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../tools/poll.ts';
import { buildReport, DEFAULT_DELIVERY_REPORTS, DeliveryReporter, FAILURE_CODES, retryDelayMs } from '../../src/sandbox/delivery-reports.ts';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/server.ts';
import type { MessageReport } from '../../src/provider/types.ts';
import { useCleanups } from '../helpers/fixtures.ts';

const message: MessageReport = {
  id: 'm-1',
  to: '+8613800138000',
  regionCode: 'CN',
  countryCode: '86',
  messageCount: 1,
  status: 'sent',
  upstream: 'aliyun',
  price: '0.050000',
};

describe('buildReport', () => {
  it('is delivered (DELIVRD) when the roll is at or above the fail rate, with the message fields and ISO dates', () => {
    expect(buildReport(message, Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1, 0, 0, 2), 0.1, 0.5)).toEqual({
      id: 'm-1',
      status: 'delivered',
      to: '+8613800138000',
      regionCode: 'CN',
      countryCode: '86',
      messageCount: 1,
      price: '0.050000',
      currency: 'CNY',
      errorCode: 'DELIVRD',
      errorMessage: 'Delivered',
      submitDate: '2026-01-01T00:00:00.000Z',
      doneDate: '2026-01-01T00:00:02.000Z',
    });
  });

  it('is failed with one of the failure codes below the fail rate, spreading over all of them', () => {
    const codes = [0, 0.04, 0.08].map((roll) => buildReport(message, 0, 0, 0.1, roll));
    expect(codes.every((r) => r.status === 'failed')).toBe(true);
    expect(codes.map((r) => r.errorCode)).toEqual(FAILURE_CODES.map((c) => c.errorCode));
    expect(buildReport(message, 0, 0, 1, 0.999).status).toBe('failed');
    expect(buildReport(message, 0, 0, 0, 0).status).toBe('delivered');
  });
});

describe('retryDelayMs', () => {
  it('doubles from the base up to the cap, jitter taking up to 20 % off', () => {
    const settings = { retryBaseMs: 100, retryMaxMs: 1_000 };
    expect([1, 2, 3, 4, 5, 40].map((a) => retryDelayMs(a, settings, 0))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(retryDelayMs(1, settings, 1)).toBe(80);
  });
});

/** A callback on loopback that answers the statuses given, in turn, then 200. */
async function callback(statuses: number[]): Promise<{ url: string; bodies: unknown[]; close(): Promise<void> }> {
  const bodies: unknown[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const cleanups = useCleanups();

describe('DeliveryReporter', () => {
  it('retries a report on non-200 answers until one is 200, posting the same body each time', async () => {
    const cb = await callback([500, 503]);
    cleanups.add(() => cb.close());
    const reporter = new DeliveryReporter({ ...DEFAULT_DELIVERY_REPORTS, callbackUrl: cb.url, delayMs: 0, failRate: 0, retryBaseMs: 5 }, () => 0.5);
    cleanups.add(() => reporter.close());
    reporter.accepted('key', [message], Date.now());
    await eventually(() => {
      expect(reporter.stats()).toMatchObject({ posted: 1, delivered: 1, retries: 2, queued: 0, lastStatus: 200 });
      return true;
    });
    expect(cb.bodies).toHaveLength(3);
    expect(new Set(cb.bodies.map((b) => JSON.stringify(b))).size).toBe(1);
  });

  it('drops a report after maxAttempts, and new reports beyond the queue bound', async () => {
    const cb = await callback([500, 500, 500]);
    cleanups.add(() => cb.close());
    const reporter = new DeliveryReporter(
      { ...DEFAULT_DELIVERY_REPORTS, callbackUrl: cb.url, delayMs: 0, retryBaseMs: 5, maxAttempts: 2, maxQueue: 1 },
      () => 0.5,
    );
    cleanups.add(() => reporter.close());
    reporter.accepted(undefined, [message, { ...message, id: 'm-2' }], Date.now());
    await eventually(() => {
      expect(reporter.stats()).toMatchObject({ posted: 0, dropped: 2, queued: 0 });
      return true;
    });
    expect(cb.bodies).toHaveLength(2);
  });

  it('sends an account its own callback URL, others the default, and nothing without any', () => {
    const reporter = new DeliveryReporter({ ...DEFAULT_DELIVERY_REPORTS, accounts: { special: 'http://a.invalid/x' } }, () => 0.5);
    expect(reporter.callbackFor('special')).toBe('http://a.invalid/x');
    expect(reporter.callbackFor('other')).toBeUndefined();
    reporter.update({ callbackUrl: 'http://b.invalid/y' });
    expect(reporter.callbackFor('other')).toBe('http://b.invalid/y');
    reporter.close();
  });
});

describe('sandbox with delivery reports', () => {
  let sandbox: RunningSandbox;

  it('posts one report per accepted message to the URL set through the admin route', async () => {
    const cb = await callback([]);
    cleanups.add(() => cb.close());
    sandbox = await startSandbox({ deliveryReports: { delayMs: 0 } });
    cleanups.add(() => sandbox.close());
    const admin = await got
      .post(`${sandbox.url}/_sandbox/delivery-reports`, { json: { callbackUrl: cb.url, failRate: 0 } })
      .json<{ settings: { callbackUrl: string } }>();
    expect(admin.settings.callbackUrl).toBe(cb.url); // one path segment: nothing to hide
    const sent = await got
      .post(`${sandbox.url}/?action=sms.message.send&accessKeyId=k`, { json: { to: ['+8613800138000', '+14155552671'], signature: 'Acme', content: 'hi' } })
      .json<{ data: { messages: { id: string }[] } }>();
    await eventually(() => {
      expect(cb.bodies).toHaveLength(2);
      return true;
    });
    expect(cb.bodies.map((b) => (b as { id: string }).id).sort()).toEqual(sent.data.messages.map((m) => m.id).sort());
    expect(cb.bodies.every((b) => (b as { status: string }).status === 'delivered')).toBe(true);
    const stats = await got(`${sandbox.url}/_sandbox/delivery-reports`).json<{ stats: { posted: number } }>();
    expect(stats.stats.posted).toBe(2);
  });

  it('never shows a token from a callback URL in its admin answers', async () => {
    sandbox = await startSandbox();
    cleanups.add(() => sandbox.close());
    const url = 'http://user:pw@receiver.invalid:8080/receipts/tok_0123456789abcdef';
    const set = await got.post(`${sandbox.url}/_sandbox/delivery-reports`, { json: { callbackUrl: url, accounts: { k: url } } }).text();
    const get = await got(`${sandbox.url}/_sandbox/delivery-reports`).text();
    for (const body of [set, get]) {
      expect(body).not.toContain('tok_0123456789abcdef');
      expect(body).not.toContain('pw@');
      expect(body).toContain('http://receiver.invalid:8080/receipts/[redacted]');
    }
    expect(sandbox.state.deliveryReports.callbackFor('k')).toBe(url);
  });

  it('refuses a callback URL that is not http(s)', async () => {
    sandbox = await startSandbox();
    cleanups.add(() => sandbox.close());
    const answer = await got.post(`${sandbox.url}/_sandbox/delivery-reports`, { json: { callbackUrl: 'ftp://x' }, throwHttpErrors: false });
    expect(answer.statusCode).toBe(400);
  });
});
