import { describe, expect, it, vi } from 'vitest';
import { useCleanups, useSandbox } from '../../helpers/fixtures.ts';
import { refusingService } from '../../helpers/provider.ts';
import { createProviderClient } from '../../../src/provider/client.ts';
import type { RetryPolicy } from '../../../src/provider/backoff.ts';
import { ProviderError } from '../../../src/provider/provider-error.ts';
import type { FailureClass, ProviderClient, ProviderRequest } from '../../../src/provider/types.ts';
import { GuardedSender, type SendOutcome } from '../../../src/worker/send/guarded-sender.ts';
import { RateLimiter } from '../../../src/worker/send/rate-limiter.ts';
import { RefusalHolds } from '../../../src/worker/send/refusal-holds.ts';
import { DEFAULT_REFUSAL_SCOPE_SETTINGS, type RefusalScopeSettings } from '../../../src/worker/send/refusal-scopes.ts';
import type { SendFootprint } from '../../../src/contracts/validate.ts';
import { OutageCounter, ServiceGate, type GateBackoffs, type PauseReason } from '../../../src/worker/send/service-gate.ts';
import { eventually } from '../../../tools/poll.ts';

const TEXT: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+8613800138000'], signature: 'Acme', content: 'Your code is 1234' } };
const UNKNOWN_TEMPLATE: ProviderRequest = {
  operation: 'sms.message.send',
  body: { to: ['+8613800138000'], signature: 'Acme', templateId: 'no_such_template' },
};
const FAST_PROBES: GateBackoffs = { insufficient_funds: { initialMs: 20, maxMs: 50 }, circuit_open: { initialMs: 20, maxMs: 50 } };
/** Probes far in the future: the gate stays shut unless the test opens it. */
const NO_PROBES: GateBackoffs = { insufficient_funds: { initialMs: 600_000, maxMs: 600_000 }, circuit_open: { initialMs: 600_000, maxMs: 600_000 } };

// Retry-After 0 keeps the in-place retry of a 503 immediate.
const sandbox = useSandbox({ faults: { retryAfterSec: 0 } }, { resetAfterEach: true });
const cleanups = useCleanups();
let seq = 0;
/**
 * Waits for an effect of the event-driven code under test (10 s is only a safety net), looking every
 * 5 ms: some tests race a probe or wait timer of a few hundred ms and must see the effect promptly.
 */
const until = (check: () => boolean, what: string): Promise<true> =>
  eventually(() => check() || undefined, 10_000, what, { interval: { initialMs: 5, maxMs: 5, jitter: 0 } });

interface Harness {
  readonly sender: GuardedSender;
  readonly holds: RefusalHolds;
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
    holds?: Partial<RefusalScopeSettings>;
    fundsPauseMaxMs?: number;
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
  cleanups.add(() => client.close());
  const changes: (PauseReason | undefined)[] = [];
  const gate = new ServiceGate({
    backoff: options.backoff ?? FAST_PROBES,
    onChange: (reason) => changes.push(reason),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  cleanups.add(() => gate.close());
  const classes: FailureClass[] = [];
  const pauses: [PauseReason, string][] = [];
  const holds = new RefusalHolds({
    settings: { ...DEFAULT_REFUSAL_SCOPE_SETTINGS, fundsProbe: (options.backoff ?? FAST_PROBES).insufficient_funds, ...options.holds },
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const sender = new GuardedSender({
    client,
    gate,
    outages: new OutageCounter(options.threshold ?? 10),
    rateLimiter: new RateLimiter(0),
    fundsPolicy: options.fundsPolicy ?? 'pause',
    fundsPauseMaxMs: options.fundsPauseMaxMs,
    holds,
    onFailureClass: (failureClass) => classes.push(failureClass),
    onPause: (reason, why) => pauses.push([reason, why]),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return { sender, holds, gate, client, changes, classes, pauses };
}

function correlationId(): string {
  seq += 1;
  return `gs-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function requestsFor(id: string): number {
  return sandbox.state.requests({ correlationId: id }).length;
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

  it('funds policy "pause": a refused one-unit command pauses all sending; it is kept for one probe and sent once the balance is back', async () => {
    const { sender, gate, changes } = harness({ fundsPolicy: 'pause', backoff: { ...FAST_PROBES, insufficient_funds: { initialMs: 300, maxMs: 300 } } });
    sandbox.state.setBalance('0.000000');
    const id = correlationId();
    const sending = track(sender.send(TEXT, id, new AbortController().signal));
    await until(() => gate.reason === 'insufficient_funds', 'the funds pause');
    expect(requestsFor(id)).toBe(1);
    expect(sending.outcome).toBeUndefined();

    // Topped up before the probe is due: the command itself is the probe, and goes through.
    sandbox.state.setBalance('100.000000');
    await until(() => sending.outcome !== undefined, 'the send');
    const outcome = sending.outcome;
    expect(outcome?.kind).toBe('sent');
    expect(requestsFor(id)).toBe(2);
    expect(outcome?.attempts).toBe(2);
    expect(sandbox.state.acceptedSends(id)).toBe(1);
    expect(gate.reason).toBeUndefined();
    expect(changes).toEqual(['insufficient_funds', undefined]);
  });

  it('funds policy "pause": a command refused for the account’s funds is never failed for it: it waits through its refused probes and is sent once the balance is back', async () => {
    const { sender, gate, holds } = harness({ fundsPolicy: 'pause' });
    sandbox.state.setBalance('0.000000');
    const id = correlationId();
    const sending = track(sender.send(TEXT, id, new AbortController().signal));
    await until(() => requestsFor(id) >= 3, 'the refusal and two refused probes');
    expect(sending.outcome).toBeUndefined();
    expect(gate.reason).toBe('insufficient_funds');
    // A multi-unit command refused while the pause is on is the account's too: no cost ceiling.
    expect(holds.snapshot.costCeiling).toBeUndefined();
    sandbox.state.setBalance('10.000000');
    await until(() => sending.outcome !== undefined, 'the send');
    expect(sending.outcome?.kind).toBe('sent');
    expect(gate.reason).toBeUndefined();
  });

  it('funds policy "pause" with FUNDS_PAUSE_MAX_MS: a command held that long by the funds pause ends FAILED 105400 (retryable, naming the setting); the pause stays', async () => {
    const { sender, gate } = harness({ fundsPolicy: 'pause', fundsPauseMaxMs: 300 });
    sandbox.state.setBalance('0.000000');
    const id = correlationId();
    const started = Date.now();
    const error = providerError(await sender.send(TEXT, id, new AbortController().signal));
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(error).toMatchObject({ code: '105400', failureClass: 'insufficient-funds', retryable: true });
    expect(error.message).toContain('FUNDS_PAUSE_MAX_MS');
    expect(requestsFor(id)).toBeGreaterThanOrEqual(2);
    expect(gate.reason).toBe('insufficient_funds');
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

  it('leaves a pause at its expiry: `expired` at once, without a request, while the gate stays blocked', async () => {
    const { sender, gate } = harness({ backoff: NO_PROBES });
    gate.block('insufficient_funds', false);
    const id = correlationId();
    const expiresAt = Date.now() + 150;
    const outcome = await sender.send(TEXT, id, new AbortController().signal, expiresAt);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
    expect(outcome).toEqual({ kind: 'expired', expiresAt, attempts: 0 });
    expect(requestsFor(id)).toBe(0);
    expect(gate.reason).toBe('insufficient_funds');
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
const AU_FOOTPRINT: SendFootprint = { operation: 'sms.message.send', regions: ['AU'], costUnits: 1 };
const CN_FOOTPRINT: SendFootprint = { operation: 'sms.message.send', regions: ['CN'], costUnits: 1 };

describe('GuardedSender: a pause that begins while a command waits for its mark and slot', () => {
  it('the command does not call once cleared: it goes back to the gate (slot and mark given back), and calls when the pause lifts', async () => {
    const { sender, gate } = harness({ backoff: NO_PROBES });
    const id = correlationId();
    const kept: boolean[] = [];
    let clearMark: (go: boolean) => void = () => undefined;
    let asked = 0;
    const hooks = {
      beforeSend: () => {
        asked += 1;
        return asked === 1 ? new Promise<boolean>((resolve) => (clearMark = resolve)) : Promise.resolve(true);
      },
      kept: (reached: boolean) => kept.push(reached),
    };
    const sending = track(sender.send(TEXT, id, new AbortController().signal, null, hooks));
    await until(() => asked === 1, 'the first beforeSend');
    // Another command's refusal closes the gate while this one waits for its mark's commit.
    gate.block('insufficient_funds', false);
    clearMark(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(requestsFor(id)).toBe(0);
    expect(kept).toEqual([false]);
    expect(sending.outcome).toBeUndefined();
    gate.clear();
    await until(() => sending.outcome !== undefined, 'the send');
    expect(sending.outcome?.kind).toBe('sent');
    expect([asked, requestsFor(id)]).toEqual([2, 1]);
  });
});

describe('GuardedSender: the callStarting hook (time to send starts at the first)', () => {
  it('is called before each call to the service, the re-sends of a held command included, and never when none is made', async () => {
    const { sender, gate } = harness({ fundsPolicy: 'pause', backoff: { ...FAST_PROBES, insufficient_funds: { initialMs: 300, maxMs: 300 } } });
    sandbox.state.setBalance('0.000000');
    const id = correlationId();
    const seen: string[] = [];
    const hooks = {
      beforeSend: async () => true,
      kept: () => undefined,
      callStarting: () => seen.push(`call starts after ${String(requestsFor(id))} requests`),
    };
    const sending = track(sender.send(TEXT, id, new AbortController().signal, null, hooks));
    await until(() => gate.reason === 'insufficient_funds', 'the funds pause');
    sandbox.state.setBalance('100.000000');
    await until(() => sending.outcome !== undefined, 'the send');
    expect(sending.outcome?.kind).toBe('sent');
    // One client call per pass (maxAttempts 1), each announced before its request reached the service.
    expect(seen).toEqual(['call starts after 0 requests', 'call starts after 1 requests']);

    const refused: string[] = [];
    const notCleared = { beforeSend: async () => false, kept: () => undefined, callStarting: () => refused.push('call') };
    expect((await sender.send(TEXT, correlationId(), new AbortController().signal, null, notCleared)).kind).toBe('abandoned');
    expect(refused).toEqual([]);
  });

  it('a hook that throws changes nothing: the command is still sent', async () => {
    const { sender } = harness();
    const id = correlationId();
    const hooks = {
      beforeSend: async () => true,
      kept: () => undefined,
      callStarting: () => {
        throw new Error('observer bug');
      },
    };
    expect((await sender.send(TEXT, id, new AbortController().signal, null, hooks)).kind).toBe('sent');
    expect(sandbox.state.acceptedSends(id)).toBe(1);
  });
});

describe('GuardedSender: throttling beyond the retry budget', () => {
  it('holds a 429 whose Retry-After exceeds the budget at the gate, probes at Retry-After (not before) and sends: nothing FAILED', async () => {
    // The gate's probe timer and its clock are faked: the test moves them instead of waiting 1 s.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    cleanups.add(() => vi.useRealTimers());
    const { sender, gate, changes, pauses } = harness({
      retry: { maxAttempts: 3, budgetMs: 300 },
      backoff: { ...FAST_PROBES, throttled: { initialMs: 20, maxMs: 5_000 } },
    });
    sandbox.setFaults({ retryAfterSec: 1 });
    sandbox.state.faults.enqueue('http429');
    const id = correlationId();
    const sending = track(sender.send(TEXT, id, new AbortController().signal));
    await until(() => gate.reason === 'throttled', 'the throttle pause');
    expect(requestsFor(id)).toBe(1);
    expect(sending.outcome).toBeUndefined();

    await vi.advanceTimersByTimeAsync(999);
    expect(requestsFor(id)).toBe(1);
    expect(sending.outcome).toBeUndefined();

    await vi.advanceTimersByTimeAsync(1);
    await until(() => sending.outcome !== undefined, 'the send');
    expect(sending.outcome?.kind).toBe('sent');
    expect(sending.outcome?.attempts).toBe(2);
    expect(requestsFor(id)).toBe(2);
    expect(sandbox.state.acceptedSends(id)).toBe(1);
    expect(changes).toEqual(['throttled', undefined]);
    expect(pauses).toEqual([['throttled', 'PROVIDER_THROTTLED (HTTP 429): 900429 TooManyRequests']]);
  });
});

describe('GuardedSender: the service refuses this client or account', () => {
  it('101301 pauses only its route: the refused command is kept for one probe and ends FAILED 101301 (retryable, naming the route) after 2 requests; the gate stays open', async () => {
    const { sender, gate, changes, pauses, classes, holds } = harness();
    const id = correlationId();
    const refusing = track(sender.send(AU_TEXT, id, new AbortController().signal, null, undefined, AU_FOOTPRINT));
    await until(() => holds.snapshot.routes.length === 1, 'the route paused');
    // Another route goes at once while AU is paused.
    const other = correlationId();
    expect((await sender.send(TEXT, other, new AbortController().signal, null, undefined, CN_FOOTPRINT)).kind).toBe('sent');
    expect(refusing.outcome).toBeUndefined();

    await until(() => refusing.outcome !== undefined, 'the probe');
    const error = providerError(refusing.outcome as SendOutcome);
    expect(error).toMatchObject({ code: '101301', failureClass: 'configuration', retryable: true, answered: true });
    expect(error.message).toContain('text to AU');
    // Sent once, held, re-sent as the route's probe, refused again: failed.
    expect(requestsFor(id)).toBe(2);
    expect(refusing.outcome?.attempts).toBe(2);
    expect(classes).toEqual(['configuration', 'configuration']);
    expect(gate.reason).toBeUndefined();
    expect(pauses).toEqual([]);
    expect(changes).toEqual([]);
  });

  it('commands to a paused route wait for its probe without a request and end FAILED 101301 (retryable) when it is refused; other routes are not held', async () => {
    const { sender, gate, holds } = harness({ holds: { maxWaitMs: 150, routeProbe: { initialMs: 100, maxMs: 60_000 } } });
    const firstId = correlationId();
    const first = track(sender.send(AU_TEXT, firstId, new AbortController().signal, null, undefined, AU_FOOTPRINT));
    await until(() => holds.snapshot.routes.length === 1, 'the route paused');
    const held = [correlationId(), correlationId()];
    const waiting = held.map((id) => track(sender.send(AU_TEXT, id, new AbortController().signal, null, undefined, AU_FOOTPRINT)));
    const others = [correlationId(), correlationId()];
    const sent = await Promise.all(others.map((id) => sender.send(TEXT, id, new AbortController().signal, null, undefined, CN_FOOTPRINT)));
    expect(sent.map((o) => o.kind)).toEqual(['sent', 'sent']);
    expect(waiting.every((w) => w.outcome === undefined)).toBe(true);

    // The refused command probes at 100 ms and is refused again; the next probe (200 ms later) is
    // beyond the others' 150 ms wait, so they end there, unsent.
    await until(() => first.outcome !== undefined && waiting.every((w) => w.outcome !== undefined), 'the held commands');
    expect(providerError(first.outcome as SendOutcome)).toMatchObject({ code: '101301', retryable: true, attempts: 2 });
    for (const w of waiting) {
      const error = providerError(w.outcome as SendOutcome);
      expect(error).toMatchObject({ code: '101301', retryable: true, attempts: 0 });
      expect(error.message).toMatch(/no valid upstream for text to AU /);
    }
    expect(held.map(requestsFor)).toEqual([0, 0]);
    // A command to the route now ends at once: its probe is not due within its wait.
    const late = correlationId();
    expect(providerError(await sender.send(AU_TEXT, late, new AbortController().signal, null, undefined, AU_FOOTPRINT)).message).toContain(
      'next probe is not due',
    );
    expect(requestsFor(late)).toBe(0);
    expect(gate.reason).toBeUndefined();
  });

  it("the gate's probe answered with a route's refusal closes the circuit: the service is up and takes this client", async () => {
    const { sender, gate } = harness({ holds: { maxWaitMs: 0 } });
    gate.block('circuit_open', false);
    const outcome = await sender.send(AU_TEXT, correlationId(), new AbortController().signal, null, undefined, AU_FOOTPRINT);
    expect(providerError(outcome).code).toBe('101301');
    expect(gate.reason).toBeUndefined();
  });

  it('101301 on three distinct routes with nothing sent in between pauses all sending (provider_rejecting)', async () => {
    const { sender, gate, pauses } = harness({ holds: { maxWaitMs: 0 } });
    // No region of these has a route in the sandbox (AU: none; the others are not in its table).
    const routes: [string, string][] = [
      ['+61412345678', 'AU'],
      ['+5511987654321', 'BR'],
      ['+27821234567', 'ZA'],
    ];
    for (const [to, region] of routes) {
      const outcome = await sender.send(
        { operation: 'sms.message.send', body: { to: [to], signature: 'Acme', content: 'hello' } },
        correlationId(),
        new AbortController().signal,
        null,
        undefined,
        { operation: 'sms.message.send', regions: [region], costUnits: 1 },
      );
      expect(providerError(outcome).code).toBe('101301');
      if (region !== 'ZA') expect(gate.reason).toBeUndefined();
    }
    expect(gate.reason).toBe('provider_rejecting');
    expect(pauses.map(([reason]) => reason)).toEqual(['provider_rejecting']);
  });

  it('while the service refuses this client (401), other commands wait at the gate without a request; they do not fail at full speed', async () => {
    const service = await refusingService();
    try {
      const { sender, gate } = harness({ baseUrl: service.url, backoff: NO_PROBES });
      const controller = new AbortController();
      const first = track(sender.send(TEXT, correlationId(), controller.signal));
      await until(() => gate.reason === 'provider_rejecting', 'the pause');
      const waiting = [0, 1, 2].map(() => track(sender.send(AU_TEXT, correlationId(), controller.signal, null, undefined, AU_FOOTPRINT)));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(first.outcome).toBeUndefined();
      expect(waiting.every((w) => w.outcome === undefined)).toBe(true);
      expect(service.requests()).toBe(1);
      controller.abort();
      await until(() => waiting.every((w) => w.outcome !== undefined), 'the waiting sends');
      expect(waiting.map((w) => w.outcome?.kind)).toEqual(['abandoned', 'abandoned', 'abandoned']);
      expect(service.requests()).toBe(1);
    } finally {
      await service.close();
    }
  });

  it("a route's probe answered 401 gives its probe back: once the gate reopens, the route is probed again", async () => {
    const service = await refusingService();
    // The holds' probe timers and clock are faked: the test moves them instead of waiting.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    cleanups.add(() => vi.useRealTimers());
    try {
      const { sender, gate, holds } = harness({ baseUrl: service.url, backoff: NO_PROBES, holds: { routeProbe: { initialMs: 50, maxMs: 50 } } });
      // AU paused as if refused (the 401 service cannot answer 101301): a held command becomes its probe.
      const refusedTicket = holds.ticket(AU_FOOTPRINT);
      holds.refused(refusedTicket, '101301');
      const controller = new AbortController();
      const probe = track(sender.send(AU_TEXT, correlationId(), controller.signal, null, undefined, AU_FOOTPRINT));
      // At the route's probe time the held command probes, and is answered 401.
      await vi.advanceTimersByTimeAsync(50);
      await until(() => gate.reason === 'provider_rejecting', 'the 401 pause');
      // Kept at the closed gate, then abandoned (a rebalance): the route's probe must not stay with it.
      controller.abort();
      await until(() => probe.outcome !== undefined, 'the abandoned send');
      expect(probe.outcome?.kind).toBe('abandoned');
      gate.clear();
      // The route's probe time passed while the first probe was held at the gate: the next command goes.
      const next = holds.ticket(AU_FOOTPRINT);
      expect(holds.admit(next)).toEqual({ kind: 'go' });
    } finally {
      await service.close();
    }
  });

  it('401 without an envelope (a revoked key) pauses sending and says why, without the key; the command is never failed for the key and is sent once the key is taken again', async () => {
    const service = await refusingService(sandbox.url);
    try {
      const { sender, gate, pauses } = harness({ baseUrl: service.url });
      const id = correlationId();
      const sending = track(sender.send(TEXT, id, new AbortController().signal));
      await until(() => service.requests() >= 3, 'the refusal and two refused probes');
      expect(sending.outcome).toBeUndefined();
      expect(gate.reason).toBe('provider_rejecting');
      expect(pauses).toEqual([['provider_rejecting', 'PROVIDER_HTTP_401 (HTTP 401)']]);
      expect(JSON.stringify(pauses)).not.toContain('guarded-sender-test');
      service.accept();
      await until(() => sending.outcome !== undefined, 'the send');
      expect(sending.outcome?.kind).toBe('sent');
      expect(requestsFor(id)).toBe(1);
      expect(gate.reason).toBeUndefined();
    } finally {
      await service.close();
    }
  });
});

/** A text to `count` CN mobiles: `count` billed units at 0.045000 each in the sandbox. */
function bulkText(count: number): { request: ProviderRequest; footprint: SendFootprint } {
  const to = Array.from({ length: count }, (_, n) => `+86138${String(10_000_000 + n)}`);
  return {
    request: { operation: 'sms.message.send', body: { to, signature: 'Acme', content: 'hello' } },
    footprint: { operation: 'sms.message.send', regions: ['CN'], costUnits: count },
  };
}

describe('GuardedSender: a refusal for funds decided per command (105400)', () => {
  it('one unaffordable command among affordable ones: the affordable ones are sent, the large one ends FAILED 105400 (retryable) after 1 request, the gate stays open', async () => {
    const { sender, gate, pauses } = harness({ backoff: NO_PROBES });
    sandbox.state.setBalance('10.000000');
    const big = bulkText(300); // 13.5 > 10
    const bigId = correlationId();
    const large = track(sender.send(big.request, bigId, new AbortController().signal, null, undefined, big.footprint));
    await until(() => requestsFor(bigId) === 1, 'the refusal');
    const small = [correlationId(), correlationId(), correlationId()];
    const sent = await Promise.all(small.map((id) => sender.send(TEXT, id, new AbortController().signal, null, undefined, CN_FOOTPRINT)));
    expect(sent.map((o) => o.kind)).toEqual(['sent', 'sent', 'sent']);
    await until(() => large.outcome !== undefined, 'the large command');
    const error = providerError(large.outcome as SendOutcome);
    expect(error).toMatchObject({ code: '105400', failureClass: 'insufficient-funds', retryable: true });
    expect(error.message).toContain('300 billed units');
    expect(requestsFor(bigId)).toBe(1);
    expect(gate.reason).toBeUndefined();
    expect(pauses).toEqual([]);
  });

  it('commands as large as a refused one wait (no request) while cheaper ones go; they end FAILED 105400 at the wait bound', async () => {
    const { sender } = harness({ backoff: NO_PROBES, holds: { maxWaitMs: 100 } });
    sandbox.state.setBalance('10.000000');
    const big = bulkText(300);
    const first = await sender.send(big.request, correlationId(), new AbortController().signal, null, undefined, big.footprint);
    expect(providerError(first).code).toBe('105400');
    const bigger = bulkText(400);
    const id = correlationId();
    const outcome = await sender.send(bigger.request, id, new AbortController().signal, null, undefined, bigger.footprint);
    expect(providerError(outcome)).toMatchObject({ code: '105400', retryable: true, attempts: 0 });
    expect(requestsFor(id)).toBe(0);
    expect((await sender.send(TEXT, correlationId(), new AbortController().signal, null, undefined, CN_FOOTPRINT)).kind).toBe('sent');
  });

  it('an account-wide funds pause probes with the cheapest command waiting, never the unaffordable one', async () => {
    const { sender, gate } = harness({ backoff: { ...FAST_PROBES, insufficient_funds: { initialMs: 200, maxMs: 200 } }, holds: { maxWaitMs: 100 } });
    sandbox.state.setBalance('1.000000');
    // Paused as after a refused one-unit command; the large command is first in line at the gate.
    gate.block('insufficient_funds', false);
    const big = bulkText(300);
    const bigId = correlationId();
    const large = track(sender.send(big.request, bigId, new AbortController().signal, null, undefined, big.footprint));
    const smallId = correlationId();
    const single = track(sender.send(TEXT, smallId, new AbortController().signal, null, undefined, CN_FOOTPRINT));
    await until(() => single.outcome !== undefined && large.outcome !== undefined, 'both outcomes');
    expect(single.outcome?.kind).toBe('sent');
    expect(providerError(large.outcome as SendOutcome)).toMatchObject({ code: '105400', retryable: true });
    // The single send probed and reopened the gate; only then did the large one go (and was refused).
    const order = sandbox.state
      .requests({})
      .map((r) => r.correlationId)
      .filter((c) => c === smallId || c === bigId);
    expect(order).toEqual([smallId, bigId]);
    expect(gate.reason).toBeUndefined();
  });

  it('among equally cheap commands the account-wide probe is one refused fewest times: a short funds outage spends first requests, not second ones', async () => {
    const { sender, gate } = harness({ backoff: { ...FAST_PROBES, insufficient_funds: { initialMs: 200, maxMs: 200 } } });
    sandbox.state.setBalance('0.000000');
    const controller = new AbortController();
    const refusedId = correlationId();
    const refused = track(sender.send(TEXT, refusedId, controller.signal, null, undefined, CN_FOOTPRINT));
    await until(() => gate.reason === 'insufficient_funds', 'the account-wide pause');
    const freshId = correlationId();
    const fresh = track(sender.send(TEXT, freshId, controller.signal, null, undefined, CN_FOOTPRINT));
    await until(() => requestsFor(freshId) === 1, 'the first probe');
    // The fresh command probed (and is kept); the refused one was not sent a second time.
    expect(requestsFor(refusedId)).toBe(1);
    expect([refused.outcome, fresh.outcome]).toEqual([undefined, undefined]);
    controller.abort();
    await until(() => refused.outcome !== undefined && fresh.outcome !== undefined, 'the abandoned sends');
  });

  it('an empty account pauses everything: a refused one-unit command closes the gate for all, and a larger command refused just before waits with them instead of failing', async () => {
    const { sender, gate, pauses } = harness({ backoff: NO_PROBES });
    sandbox.state.setBalance('0.000000');
    const big = bulkText(300);
    const bigId = correlationId();
    const controller = new AbortController();
    const large = track(sender.send(big.request, bigId, controller.signal, null, undefined, big.footprint));
    await until(() => requestsFor(bigId) === 1, 'the large refusal');
    expect(gate.reason).toBeUndefined();
    const single = track(sender.send(TEXT, correlationId(), controller.signal, null, undefined, CN_FOOTPRINT));
    await until(() => gate.reason === 'insufficient_funds', 'the account-wide pause');
    expect(pauses.map(([reason]) => reason)).toEqual(['insufficient_funds']);
    const later = correlationId();
    const waiting = track(sender.send(TEXT, later, controller.signal, null, undefined, CN_FOOTPRINT));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(requestsFor(later)).toBe(0);
    expect([single.outcome, waiting.outcome, large.outcome]).toEqual([undefined, undefined, undefined]);
    expect(requestsFor(bigId)).toBe(1);
    controller.abort();
    await until(() => waiting.outcome !== undefined && single.outcome !== undefined && large.outcome !== undefined, 'the abandoned sends');
    // The large command, refused before the pause, waited with the others: given up unsent (a rebalance), not FAILED.
    expect([single.outcome?.kind, waiting.outcome?.kind, large.outcome?.kind]).toEqual(['abandoned', 'abandoned', 'abandoned']);
    gate.close();
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

describe('GuardedSender: a command kept after an ambiguous answer (PROVIDER_RETRY_AMBIGUOUS=true) may have been sent', () => {
  /** The breaker trips at the first failure, so the ambiguous answer is kept for the probe. */
  const keptAfterAmbiguous = (backoff: GateBackoffs): Harness =>
    harness({ threshold: 1, backoff, retry: { maxAttempts: 1, retryAmbiguous: true }, responseTimeoutMs: 100 });

  it('given up while it waits for its next call, it says maybe sent (its ledger mark stays)', async () => {
    const { sender, gate } = keptAfterAmbiguous(NO_PROBES);
    sandbox.state.faults.enqueue('hang-after');
    const id = correlationId();
    const controller = new AbortController();
    const kept: boolean[] = [];
    const hooks = { beforeSend: async () => true, kept: (reached: boolean) => kept.push(reached) };
    const sending = track(sender.send(TEXT, id, controller.signal, null, hooks));
    await until(() => gate.reason === 'circuit_open', 'the breaker');
    controller.abort(new Error('the partition moved'));
    await until(() => sending.outcome !== undefined, 'the outcome');
    expect(sending.outcome).toEqual({ kind: 'abandoned', attempts: 1, maybeSent: true });
    // Kept once, reported as maybe reached: its slot goes back, its mark stays.
    expect(kept).toEqual([true]);
    expect(sandbox.state.acceptedSends(id)).toBe(1);
  });

  it('a later call that surely did not arrive does not withdraw its mark', async () => {
    const { sender } = keptAfterAmbiguous(FAST_PROBES);
    sandbox.state.faults.enqueue('hang-after');
    sandbox.state.faults.enqueue('http503');
    const id = correlationId();
    const kept: boolean[] = [];
    const hooks = { beforeSend: async () => true, kept: (reached: boolean) => kept.push(reached) };
    const outcome = await sender.send(TEXT, id, new AbortController().signal, null, hooks);
    expect(outcome).toMatchObject({ kind: 'sent', attempts: 3 });
    // The first call may have reached the service: kept as such (its mark stays, in the machine's
    // record of it, whatever a later call says); the 503 surely did not.
    expect(kept).toEqual([true, false]);
    // The operator's trade: the ambiguous call had been processed, so the service sent it twice.
    expect(sandbox.state.acceptedSends(id)).toBe(2);
  });

  it('held back by a paused route before its next call until it gives up, it ends with its ambiguous failure (UNKNOWN), not FAILED 101301', async () => {
    const { sender, holds } = harness({
      threshold: 1,
      backoff: FAST_PROBES,
      retry: { maxAttempts: 1, retryAmbiguous: true },
      responseTimeoutMs: 300,
      holds: { maxWaitMs: 100, routeProbe: { initialMs: 60_000, maxMs: 60_000 } },
    });
    // Its body is routable (the sandbox takes it, then hangs); its footprint puts it on the AU route.
    sandbox.state.faults.enqueue('hang-after');
    const id = correlationId();
    const sending = track(sender.send(TEXT, id, new AbortController().signal, null, undefined, AU_FOOTPRINT));
    await until(() => requestsFor(id) === 1, 'its first call');
    // Meanwhile another command is refused 101301 on that route: the route pauses.
    const refused = track(sender.send(AU_TEXT, correlationId(), new AbortController().signal, null, undefined, AU_FOOTPRINT));
    await until(() => holds.snapshot.routes.length === 1, 'the route paused');
    await until(() => sending.outcome !== undefined && refused.outcome !== undefined, 'both outcomes');
    expect(providerError(sending.outcome as SendOutcome)).toMatchObject({ failureClass: 'ambiguous', attempts: 1 });
    expect(sandbox.state.acceptedSends(id)).toBe(1);
  });

  it('running out of time before its next call is its ambiguous failure (UNKNOWN), not `expired`', async () => {
    const { sender } = keptAfterAmbiguous({ ...FAST_PROBES, circuit_open: { initialMs: 400, maxMs: 400 } });
    sandbox.state.faults.enqueue('hang-after');
    const id = correlationId();
    const outcome = await sender.send(TEXT, id, new AbortController().signal, Date.now() + 250);
    expect(providerError(outcome)).toMatchObject({ failureClass: 'ambiguous', attempts: 1 });
    expect(requestsFor(id)).toBe(1);
  });
});
