import http from 'node:http';
import type net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProviderClient } from '../../src/provider/client.ts';
import type { RetryPolicy } from '../../src/provider/backoff.ts';
import { ProviderError } from '../../src/provider/provider-error.ts';
import type { FailureClass, ProviderClient, ProviderRequest } from '../../src/provider/types.ts';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/index.ts';
import { GuardedSender, type SendOutcome } from '../../src/worker/guarded-sender.ts';
import { RateLimiter } from '../../src/worker/rate-limiter.ts';
import { OutageCounter, ServiceGate, type GateBackoffs, type PauseReason } from '../../src/worker/service-gate.ts';

const TEXT: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+8613800138000'], signature: 'Acme', content: 'Your code is 1234' } };
const UNKNOWN_TEMPLATE: ProviderRequest = {
  operation: 'sms.message.send',
  body: { to: ['+8613800138000'], signature: 'Acme', templateId: 'no_such_template' },
};
const FAST_PROBES: GateBackoffs = { insufficient_funds: { initialMs: 20, maxMs: 50 }, circuit_open: { initialMs: 20, maxMs: 50 } };
/** Probes far in the future: the gate stays shut unless the test opens it. */
const NO_PROBES: GateBackoffs = { insufficient_funds: { initialMs: 600_000, maxMs: 600_000 }, circuit_open: { initialMs: 600_000, maxMs: 600_000 } };

let sandbox: RunningSandbox;
const clients: ProviderClient[] = [];
const gates: ServiceGate[] = [];
let seq = 0;

beforeAll(async () => {
  // Retry-After 0 keeps the in-place retry of a 503 immediate.
  sandbox = await startSandbox({ port: 0, faults: { retryAfterSec: 0 } });
});
afterAll(async () => {
  await sandbox.close();
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
  for (const gate of gates.splice(0)) gate.close();
  sandbox.state.reset();
});

interface Harness {
  readonly sender: GuardedSender;
  readonly gate: ServiceGate;
  readonly client: ProviderClient;
  readonly changes: (PauseReason | undefined)[];
  readonly classes: FailureClass[];
  readonly pauses: [PauseReason, string][];
}

function harness(
  options: {
    threshold?: number;
    fundsPolicy?: 'pause' | 'fail';
    retry?: Partial<RetryPolicy>;
    backoff?: GateBackoffs;
    now?: () => number;
    responseTimeoutMs?: number;
    baseUrl?: string;
  } = {},
): Harness {
  const client = createProviderClient({
    baseUrl: options.baseUrl ?? sandbox.url,
    accessKeyId: 'guarded-sender-test',
    connectTimeoutMs: 500,
    responseTimeoutMs: options.responseTimeoutMs ?? 2_000,
    maxSockets: 8,
    retry: { maxAttempts: 1, budgetMs: 2_000, baseDelayMs: 5, maxDelayMs: 20, retryAmbiguous: false, ...options.retry },
    random: () => 0.5,
  });
  clients.push(client);
  const changes: (PauseReason | undefined)[] = [];
  const gate = new ServiceGate({ backoff: options.backoff ?? FAST_PROBES, onChange: (reason) => changes.push(reason) });
  gates.push(gate);
  const classes: FailureClass[] = [];
  const pauses: [PauseReason, string][] = [];
  const sender = new GuardedSender({
    client,
    gate,
    outages: new OutageCounter(options.threshold ?? 10),
    rateLimiter: new RateLimiter(0),
    fundsPolicy: options.fundsPolicy ?? 'pause',
    onFailureClass: (failureClass) => classes.push(failureClass),
    onPause: (reason, why) => pauses.push([reason, why]),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return { sender, gate, client, changes, classes, pauses };
}

function correlationId(): string {
  seq += 1;
  return `gs-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function requestsFor(id: string): number {
  return sandbox.state.requests({ correlationId: id }).length;
}

/** Polls a condition (event-driven code under test; the limit is only a safety net). */
async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function track(promise: Promise<SendOutcome>): { outcome: SendOutcome | undefined } {
  const state: { outcome: SendOutcome | undefined } = { outcome: undefined };
  void promise.then((outcome) => (state.outcome = outcome));
  return state;
}

function providerError(outcome: SendOutcome): ProviderError {
  if (outcome.kind !== 'failed') throw new Error(`expected a failed outcome, got ${outcome.kind}`);
  if (!(outcome.error instanceof ProviderError)) throw new Error(`expected a ProviderError, got ${String(outcome.error)}`);
  return outcome.error;
}

describe('GuardedSender with the real client and sandbox', () => {
  it('sends and reports the attempts made', async () => {
    const { sender, gate } = harness({ retry: { maxAttempts: 3 } });
    const id = correlationId();
    sandbox.state.faults.enqueue('http503');
    const outcome = await sender.send(TEXT, id, new AbortController().signal);
    expect(outcome.kind).toBe('sent');
    if (outcome.kind !== 'sent') return;
    expect(outcome.attempts).toBe(2);
    expect(outcome.success.result.recipients).toBe(1);
    expect(outcome.success.requestId).toBeTypeOf('string');
    expect(sandbox.state.acceptedSends(id)).toBe(1);
    expect(requestsFor(id)).toBe(2);
    expect(gate.reason).toBeUndefined();
  });

  it('fails a business error at once, without a retry, and leaves the gate open', async () => {
    const { sender, gate, classes } = harness({ retry: { maxAttempts: 3 } });
    const id = correlationId();
    const outcome = await sender.send(UNKNOWN_TEMPLATE, id, new AbortController().signal);
    const error = providerError(outcome);
    expect(error.failureClass).toBe('business');
    expect(error.code).toBe('900314');
    expect(error.retryable).toBe(false);
    expect(outcome.attempts).toBe(1);
    expect(requestsFor(id)).toBe(1);
    expect(classes).toEqual(['business']);
    expect(gate.reason).toBeUndefined();
  });

  it('funds policy "pause": holds the send on InsufficientFunds, probes, and sends once the balance is back', async () => {
    const { sender, gate, changes } = harness({ fundsPolicy: 'pause' });
    sandbox.state.setBalance('0.000000');
    const id = correlationId();
    const sending = track(sender.send(TEXT, id, new AbortController().signal));
    await until(() => gate.reason === 'insufficient_funds', 'the funds pause');
    // The command itself is the probe: it is re-sent while the balance is empty, and kept.
    await until(() => requestsFor(id) >= 2, 'a probe');
    expect(sending.outcome).toBeUndefined();

    sandbox.state.setBalance('100.000000');
    await until(() => sending.outcome !== undefined, 'the send');
    const outcome = sending.outcome;
    expect(outcome?.kind).toBe('sent');
    expect(outcome?.attempts).toBe(requestsFor(id));
    expect(sandbox.state.acceptedSends(id)).toBe(1);
    expect(gate.reason).toBeUndefined();
    expect(changes).toEqual(['insufficient_funds', undefined]);
  });

  it('funds policy "fail": InsufficientFunds fails the command at once and does not pause', async () => {
    const { sender, gate, changes } = harness({ fundsPolicy: 'fail' });
    sandbox.state.setBalance('0.000000');
    const id = correlationId();
    const outcome = await sender.send(TEXT, id, new AbortController().signal);
    const error = providerError(outcome);
    expect(error.failureClass).toBe('insufficient-funds');
    expect(error.code).toBe('105400');
    expect(outcome.attempts).toBe(1);
    expect(requestsFor(id)).toBe(1);
    expect(gate.reason).toBeUndefined();
    expect(changes).toEqual([]);
  });

  it('circuit: fails outage failures below the threshold, holds from the threshold on, and sends after a successful probe', async () => {
    const { sender, gate, changes } = harness({ threshold: 2, retry: { maxAttempts: 1 } });
    sandbox.setFaults({ down: true });
    const first = correlationId();
    const firstOutcome = await sender.send(TEXT, first, new AbortController().signal);
    const error = providerError(firstOutcome);
    expect(error.failureClass).toBe('throttled');
    expect(error.retryable).toBe(true);
    expect(gate.reason).toBeUndefined();

    const second = correlationId();
    const sending = track(sender.send(TEXT, second, new AbortController().signal));
    await until(() => gate.reason === 'circuit_open', 'the circuit to open');
    await until(() => requestsFor(second) >= 2, 'a failed probe');
    expect(sending.outcome).toBeUndefined();

    sandbox.setFaults({ down: false });
    await until(() => sending.outcome !== undefined, 'the probe to succeed');
    expect(sending.outcome?.kind).toBe('sent');
    expect(sending.outcome?.attempts).toBe(requestsFor(second));
    expect(sandbox.state.acceptedSends(second)).toBe(1);
    expect(sandbox.state.acceptedSends(first)).toBe(0);
    expect(gate.reason).toBeUndefined();
    expect(changes).toEqual(['circuit_open', undefined]);
  });

  it('returns `expired` without a request when the command expired while it waited at the gate', async () => {
    let t = 1_000_000;
    const { sender, gate } = harness({ backoff: NO_PROBES, now: () => t });
    gate.block('insufficient_funds', false);
    const id = correlationId();
    const sending = track(sender.send(TEXT, id, new AbortController().signal, t + 100));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sending.outcome).toBeUndefined();

    t += 100;
    gate.clear();
    await until(() => sending.outcome !== undefined, 'the outcome');
    expect(sending.outcome).toEqual({ kind: 'expired', expiresAt: 1_000_100, attempts: 0 });
    expect(requestsFor(id)).toBe(0);
  });

  it('sends a command that has not expired yet when it passes the gate', async () => {
    const t = 1_000_000;
    const { sender } = harness({ now: () => t });
    const id = correlationId();
    const outcome = await sender.send(TEXT, id, new AbortController().signal, t + 1);
    expect(outcome.kind).toBe('sent');
    expect(requestsFor(id)).toBe(1);
  });

  it('returns `abandoned` without a request when the signal is aborted while the send waits at the gate', async () => {
    const { sender, gate } = harness({ backoff: NO_PROBES });
    gate.block('circuit_open', false);
    const id = correlationId();
    const controller = new AbortController();
    const sending = track(sender.send(TEXT, id, controller.signal));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sending.outcome).toBeUndefined();
    controller.abort(new Error('shutdown'));
    await until(() => sending.outcome !== undefined, 'the outcome');
    expect(sending.outcome).toEqual({ kind: 'abandoned', attempts: 0 });
    expect(requestsFor(id)).toBe(0);
    expect(gate.reason).toBe('circuit_open');
  });

  it.each(['reset-after', 'hang-after'] as const)(
    'does not keep an ambiguous failure (%s) when re-sending is not allowed, even when it trips the breaker',
    async (fault) => {
      const { sender, gate, classes } = harness({ threshold: 1, backoff: NO_PROBES, retry: { maxAttempts: 3, retryAmbiguous: false }, responseTimeoutMs: 200 });
      sandbox.state.faults.enqueue(fault);
      const id = correlationId();
      const outcome = await sender.send(TEXT, id, new AbortController().signal);
      const error = providerError(outcome);
      expect(error.failureClass).toBe('ambiguous');
      expect(error.retryable).toBe(false);
      expect(outcome.attempts).toBe(1);
      expect(classes).toEqual(['ambiguous']);
      // The breaker tripped, but the command was not held for a re-send: the service has it once.
      expect(gate.reason).toBe('circuit_open');
      expect(sandbox.state.acceptedSends(id)).toBe(1);
      expect(requestsFor(id)).toBe(1);
    },
  );
});

const AU_TEXT: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+61412345678'], signature: 'Acme', content: 'hello' } };

/** A loopback service that answers every request 401 without an envelope (a revoked key). */
async function refusingService(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests += 1;
    req.resume();
    res.writeHead(401, { 'content-type': 'text/html' });
    res.end('<html>401 Authorization Required</html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    requests: () => requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('GuardedSender: the callStarting hook (time to send starts at the first)', () => {
  it('is called before each call to the service, the re-sends of a held command included, and never when none is made', async () => {
    const { sender } = harness({ fundsPolicy: 'pause' });
    sandbox.state.setBalance('0.000000');
    const id = correlationId();
    const seen: string[] = [];
    const hooks = {
      beforeSend: async () => true,
      notSent: () => undefined,
      callStarting: () => seen.push(`call starts after ${String(requestsFor(id))} requests`),
    };
    const sending = track(sender.send(TEXT, id, new AbortController().signal, null, hooks));
    await until(() => requestsFor(id) >= 2, 'a probe');
    sandbox.state.setBalance('100.000000');
    await until(() => sending.outcome !== undefined, 'the send');
    expect(sending.outcome?.kind).toBe('sent');
    // One client call per pass (maxAttempts 1), each announced before its request reached the service.
    expect(seen).toEqual(Array.from({ length: requestsFor(id) }, (_, n) => `call starts after ${String(n)} requests`));

    const refused: string[] = [];
    const notCleared = { beforeSend: async () => false, notSent: () => undefined, callStarting: () => refused.push('call') };
    expect((await sender.send(TEXT, correlationId(), new AbortController().signal, null, notCleared)).kind).toBe('abandoned');
    expect(refused).toEqual([]);
  });

  it('a hook that throws changes nothing: the command is still sent', async () => {
    const { sender } = harness();
    const id = correlationId();
    const hooks = {
      beforeSend: async () => true,
      notSent: () => undefined,
      callStarting: () => {
        throw new Error('observer bug');
      },
    };
    expect((await sender.send(TEXT, id, new AbortController().signal, null, hooks)).kind).toBe('sent');
    expect(sandbox.state.acceptedSends(id)).toBe(1);
  });
});

describe('GuardedSender: throttling beyond the retry budget', () => {
  it('holds a 429 whose Retry-After exceeds the budget at the gate, probes at Retry-After and sends: nothing FAILED', async () => {
    const { sender, gate, changes, pauses } = harness({
      retry: { maxAttempts: 3, budgetMs: 300 },
      backoff: { ...FAST_PROBES, throttled: { initialMs: 20, maxMs: 5_000 } },
    });
    sandbox.setFaults({ retryAfterSec: 1 });
    sandbox.state.faults.enqueue('http429');
    const id = correlationId();
    const started = performance.now();
    const sending = track(sender.send(TEXT, id, new AbortController().signal));
    await until(() => gate.reason === 'throttled', 'the throttle pause');
    expect(requestsFor(id)).toBe(1);
    expect(sending.outcome).toBeUndefined();

    await until(() => sending.outcome !== undefined, 'the send');
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(sending.outcome?.kind).toBe('sent');
    expect(sending.outcome?.attempts).toBe(2);
    expect(sandbox.state.acceptedSends(id)).toBe(1);
    expect(changes).toEqual(['throttled', undefined]);
    expect(pauses).toEqual([['throttled', 'PROVIDER_THROTTLED (HTTP 429): 900429 TooManyRequests']]);
  });
});

describe('GuardedSender: the service refuses this client or account', () => {
  it('101301 pauses sending (provider_rejecting), keeps the command for one probe, fails it when refused again; the next command re-opens', async () => {
    const { sender, gate, changes, pauses, classes } = harness();
    const id = correlationId();
    const outcome = await sender.send(AU_TEXT, id, new AbortController().signal);
    const error = providerError(outcome);
    expect(error).toMatchObject({ code: '101301', failureClass: 'configuration', retryable: false, answered: true });
    // Sent once, held, re-sent as the probe, refused again: failed, and the gate stays shut.
    expect(requestsFor(id)).toBe(2);
    expect(outcome.attempts).toBe(2);
    expect(classes).toEqual(['configuration', 'configuration']);
    expect(gate.reason).toBe('provider_rejecting');
    expect(pauses).toHaveLength(1);
    expect(pauses[0]?.[0]).toBe('provider_rejecting');
    expect(pauses[0]?.[1]).toMatch(/^101301 \(HTTP 400\): /);

    const next = correlationId();
    const sent = await sender.send(TEXT, next, new AbortController().signal);
    expect(sent.kind).toBe('sent');
    expect(gate.reason).toBeUndefined();
    expect(changes).toEqual(['provider_rejecting', undefined]);
  });

  it('other commands wait while the service refuses; they do not fail at full speed', async () => {
    const { sender, gate } = harness({ backoff: NO_PROBES });
    const first = track(sender.send(AU_TEXT, correlationId(), new AbortController().signal));
    await until(() => gate.reason === 'provider_rejecting', 'the pause');
    const others = [correlationId(), correlationId(), correlationId()];
    const waiting = others.map((id) => track(sender.send(TEXT, id, new AbortController().signal)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(first.outcome).toBeUndefined();
    expect(waiting.every((w) => w.outcome === undefined)).toBe(true);
    expect(others.map(requestsFor)).toEqual([0, 0, 0]);
    gate.clear();
    await until(() => waiting.every((w) => w.outcome !== undefined), 'the waiting sends');
    expect(waiting.map((w) => w.outcome?.kind)).toEqual(['sent', 'sent', 'sent']);
  });

  it('401 without an envelope (a revoked key) pauses sending and says why, without the key', async () => {
    const service = await refusingService();
    try {
      const { sender, gate, pauses } = harness({ baseUrl: service.url });
      const outcome = await sender.send(TEXT, correlationId(), new AbortController().signal);
      expect(providerError(outcome)).toMatchObject({ code: 'PROVIDER_HTTP_401', failureClass: 'configuration' });
      expect(service.requests()).toBe(2);
      expect(gate.reason).toBe('provider_rejecting');
      expect(pauses).toEqual([['provider_rejecting', 'PROVIDER_HTTP_401 (HTTP 401)']]);
      expect(JSON.stringify(pauses)).not.toContain('guarded-sender-test');
    } finally {
      await service.close();
    }
  });
});

describe('GuardedSender: shutdown and expiry', () => {
  it("a send aborted by the client's close() (shutdown) is abandoned, and the breaker does not count it", async () => {
    const { sender, gate, client, classes } = harness({ threshold: 1 });
    sandbox.state.faults.enqueue('hang');
    const id = correlationId();
    const sending = track(sender.send(TEXT, id, new AbortController().signal));
    await until(() => requestsFor(id) === 1, 'the request');
    client.close();
    await until(() => sending.outcome !== undefined, 'the outcome');
    // The request had reached the service: the outcome says so, so its ledger mark is kept.
    expect(sending.outcome).toEqual({ kind: 'abandoned', attempts: 1, maybeSent: true });
    // A threshold of 1 would have opened the circuit had the abort counted as an outage.
    expect(gate.reason).toBeUndefined();
    expect(classes).toEqual([]);
  });

  it("returns `expired` when a surely-unsent send runs into the command's expiry (503 asking for longer than it lives)", async () => {
    const { sender } = harness({ retry: { maxAttempts: 3, budgetMs: 5_000 } });
    sandbox.setFaults({ retryAfterSec: 1 });
    sandbox.state.faults.enqueue('http503');
    const id = correlationId();
    const expiresAt = Date.now() + 300;
    const outcome = await sender.send(TEXT, id, new AbortController().signal, expiresAt);
    expect(outcome).toEqual({ kind: 'expired', expiresAt, attempts: 1 });
    expect(requestsFor(id)).toBe(1);
    expect(sandbox.state.acceptedSends(id)).toBe(0);
  });

  it('keeps the failure (outcome unknown) when the last attempt may have been sent and the expiry stops the retries', async () => {
    // retryAmbiguous on: without the deadline, the retry 500 ms later would send it again, after expiry.
    const { sender } = harness({
      retry: { maxAttempts: 3, budgetMs: 5_000, retryAmbiguous: true, baseDelayMs: 1_000, maxDelayMs: 1_000 },
      responseTimeoutMs: 100,
    });
    sandbox.state.faults.enqueue('hang-after');
    const id = correlationId();
    const outcome = await sender.send(TEXT, id, new AbortController().signal, Date.now() + 300);
    expect(providerError(outcome)).toMatchObject({ failureClass: 'ambiguous', stopReason: 'deadline', attempts: 1 });
    expect(requestsFor(id)).toBe(1);
    expect(sandbox.state.acceptedSends(id)).toBe(1);
  });
});
