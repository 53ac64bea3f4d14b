import { describe, expect, it } from 'vitest';
import { FaultPlan, sampleLatency, seededRandom } from '../../src/sandbox/faults.ts';
import { parseSandboxArgs, runSandboxFromArgs } from '../../src/sandbox/main.ts';
import { DEFAULT_FAULTS } from '../../src/sandbox/faults.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { eventually } from '../../tools/poll.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { checkAuth } from '../../src/sandbox/auth.ts';
import { signingQuery } from '../../src/provider/signing.ts';

/** Replays the given values, in order. */
function scripted(values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] ?? 0;
}

describe('FaultPlan', () => {
  it('draws faults from the rates with the injected random source', () => {
    const plan = new FaultPlan({ ...DEFAULT_FAULTS, rates: { http500: 0.1, http503: 0.2 } }, scripted([0.05, 0.15, 0.29, 0.31]));
    expect([plan.next(), plan.next(), plan.next(), plan.next()]).toEqual(['http500', 'http503', 'http503', undefined]);
  });

  it('the queue comes before the rates and is consumed in order', () => {
    const plan = new FaultPlan({ ...DEFAULT_FAULTS, rates: { http500: 1 } }, () => 0);
    plan.enqueue('hang');
    plan.enqueue('reset', 2);
    expect([plan.next(), plan.next(), plan.next(), plan.next()]).toEqual(['hang', 'reset', 'reset', 'http500']);
  });

  it('"down" wins over everything', () => {
    const plan = new FaultPlan({ ...DEFAULT_FAULTS, down: true }, () => 0.99);
    plan.enqueue('hang');
    expect(plan.next()).toBe('http503');
    expect(plan.queued).toEqual(['hang']);
  });

  it('no rates, no queue: no fault and no random draw', () => {
    let draws = 0;
    const plan = new FaultPlan(DEFAULT_FAULTS, () => {
      draws += 1;
      return 0;
    });
    expect(plan.next()).toBeUndefined();
    expect(draws).toBe(0);
  });
});

describe('latency', () => {
  it('fixed and uniform', () => {
    expect(sampleLatency({ kind: 'fixed', ms: 12 }, Math.random)).toBe(12);
    expect(sampleLatency({ kind: 'uniform', minMs: 10, maxMs: 20 }, () => 0.5)).toBe(15);
  });

  it('log-normal hits the requested median and p99', () => {
    const random = seededRandom(7);
    const samples = Array.from({ length: 20_000 }, () => sampleLatency({ kind: 'lognormal', medianMs: 20, p99Ms: 200 }, random)).sort((a, b) => a - b);
    const median = samples[10_000] ?? 0;
    const p99 = samples[19_800] ?? 0;
    expect(median).toBeGreaterThan(18);
    expect(median).toBeLessThan(22);
    expect(p99).toBeGreaterThan(170);
    expect(p99).toBeLessThan(235);
  });

  it('a seeded random source is reproducible', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const first = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(first);
    expect(first.every((x) => x >= 0 && x < 1)).toBe(true);
  });
});

describe('sandbox faults over HTTP', () => {
  /** The latency waits the sandbox was asked for; each is held until the test releases it. */
  const waits: { ms: number; release: () => void }[] = [];
  const sandbox = useSandbox(
    {
      faults: { latency: { kind: 'fixed', ms: 60 } },
      sleep: (ms) => new Promise<void>((resolve) => waits.push({ ms, release: resolve })),
    },
    { resetAfterEach: true },
  );
  const cleanups = useCleanups();

  it('holds each answer for the configured latency', async () => {
    let answered = false;
    const answering = fetchAnswer(sandbox.url).finally(() => (answered = true));
    const wait = await eventually(() => waits.shift(), 5_000, 'the latency wait');
    expect(wait.ms).toBe(60);
    expect(answered).toBe(false);
    wait.release();
    expect((await answering).status).toBe(200);
    expect(sandbox.state.requests().map((r) => r.latencyMs)).toEqual([60]);
  });

  it('malformed answers a non-JSON 200 after processing the send', async () => {
    sandbox.setFaults({ enqueue: [{ kind: 'malformed' }] });
    const answering = fetchAnswer(sandbox.url, 'corr-m');
    (await eventually(() => waits.shift(), 5_000, 'the latency wait')).release();
    const response = await answering;
    expect(response.status).toBe(200);
    expect(() => JSON.parse(response.body) as unknown).toThrow();
    expect(sandbox.state.acceptedSends('corr-m')).toBe(1);
  });

  it('close() ends a hanging request', async () => {
    const hanging = await startSandbox({ faults: { rates: { hang: 1 } } });
    cleanups.add(() => hanging.close());
    const pending = fetchAnswer(hanging.url).then(
      () => 'answered',
      () => 'dropped',
    );
    await eventually(() => hanging.state.stats().faults.hang === 1, 5_000, 'the hang');
    await hanging.close();
    expect(await pending).toBe('dropped');
  });
});

/** One raw text send; node:http keeps this independent of the client under test. */
async function fetchAnswer(base: string, correlationId = 'x'): Promise<{ status: number; body: string }> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/?action=sms.message.send&accessKeyId=k`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'x-correlation-id': correlationId }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ to: ['+8613800138000'], signature: 'Acme', content: 'hi' }));
  });
}

describe('auth (pure)', () => {
  it('accepts what the client signs, within the 10-minute window', () => {
    const now = 1_700_000_000_000;
    const signed = signingQuery('key', 'sms.message.send', 'secret', now - 9 * 60 * 1000);
    const query = new URLSearchParams({ action: 'sms.message.send', accessKeyId: 'key', ...signed });
    expect(checkAuth(query, { accessKeyId: 'key', accessKeySecret: 'secret' }, now)).toBeUndefined();
    expect(checkAuth(query, { accessKeyId: 'key', accessKeySecret: 'other' }, now)).toBe('invalidSignature');
    expect(checkAuth(query, { accessKeySecret: 'secret' }, now + 2 * 60 * 1000)).toBe('timestampOutOfRange');
  });

  it('simple mode only needs a key id', () => {
    expect(checkAuth(new URLSearchParams({ accessKeyId: 'any' }), {}, 0)).toBeUndefined();
    expect(checkAuth(new URLSearchParams({}), {}, 0)).toBe('missingAccessKeyId');
  });
});

describe('sandbox command line', () => {
  it('parses flags into options', () => {
    expect(
      parseSandboxArgs([
        '--port',
        '8081',
        '--secret',
        's3',
        '--access-key-id',
        'id',
        '--balance',
        '5',
        '--seed',
        '9',
        '--latency-ms',
        '20',
        '--latency-p99-ms',
        '200',
        '--rate-503',
        '0.1',
        '--rate-reset',
        '0.01',
        '--down',
      ]),
    ).toEqual({
      port: 8081,
      accessKeySecret: 's3',
      accessKeyId: 'id',
      balance: '5',
      seed: 9,
      faults: {
        latency: { kind: 'lognormal', medianMs: 20, p99Ms: 200 },
        rates: { http503: 0.1, reset: 0.01 },
        down: true,
        retryAfterSec: 1,
      },
    });
  });

  it('reports every bad flag at once', () => {
    expect(() => parseSandboxArgs(['--port', 'x', '--rate-500', '2'])).toThrowError(/--port must be a port number[\s\S]*--rate-500/);
  });

  it('reads the delivery-report flags, and refuses a callback that is not an http(s) URL', () => {
    expect(parseSandboxArgs(['--callback-url', 'http://127.0.0.1:8080/receipts/tok', '--report-delay-ms', '50', '--report-fail-rate', '0.5'])).toMatchObject({
      deliveryReports: { callbackUrl: 'http://127.0.0.1:8080/receipts/tok', delayMs: 50, failRate: 0.5 },
    });
    expect(parseSandboxArgs([])).not.toHaveProperty('deliveryReports');
    expect(() => parseSandboxArgs(['--callback-url', 'ftp://x', '--report-fail-rate', '2'])).toThrowError(
      /--report-fail-rate[\s\S]*--callback-url must be an http\(s\) URL/,
    );
  });

  it('starts a sandbox with delivery reports on, logging neither the secret nor the callback URL', async () => {
    const lines: string[] = [];
    const sandbox = await runSandboxFromArgs(['--port', '0', '--callback-url', 'http://127.0.0.1:9/receipts/tok_secret_0123456789'], (line) =>
      lines.push(line),
    );
    try {
      expect(lines[0]).toContain('delivery reports on');
      expect(lines[0]).not.toContain('tok_secret_0123456789');
    } finally {
      await sandbox.close();
    }
  });

  it('starts a sandbox and logs a line without the secret', async () => {
    const lines: string[] = [];
    const sandbox = await runSandboxFromArgs(['--port', '0', '--secret', 'top-secret-value'], (line) => lines.push(line));
    try {
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(sandbox.url);
      expect(lines[0]).toContain('auth hmac');
      expect(lines[0]).not.toContain('top-secret-value');
    } finally {
      await sandbox.close();
    }
  });
});

describe('sandbox CLI: --text-route (an account with routes of its own)', () => {
  it('parses REGION=upstream:price and REGION=none; names a malformed one and a region given twice', () => {
    expect(parseSandboxArgs(['--text-route', 'AU=au.backup:0.090000', '--text-route', 'CN=none']).textRoutes).toEqual({
      AU: { upstream: 'au.backup', price: '0.090000' },
      CN: null,
    });
    expect(() => parseSandboxArgs(['--text-route', 'au=x:1', '--text-route', 'AU=none', '--text-route', 'AU=y:0.1'])).toThrowError(
      /--text-route must be REGION=upstream:price[\s\S]*--text-route gives AU twice/,
    );
  });
});
