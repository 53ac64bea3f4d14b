import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OutageCounter, PAUSE_REASONS, ServiceGate, type GateBackoffs, type Passage, type PauseReason } from '../../../src/worker/send/service-gate.ts';

/**
 * The gate decides with its injected clock and wakes its waiters with a timer. Tests drive the
 * clock by hand and the timer through vitest's fake setTimeout, so nothing depends on wall time.
 */
const BACKOFF: GateBackoffs = {
  insufficient_funds: { initialMs: 30, maxMs: 100 },
  circuit_open: { initialMs: 20, maxMs: 50 },
};

/** Lets every pending promise callback run (setImmediate is not faked here). */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Tracked {
  settled: boolean;
  value?: Passage | 'timeout';
  error?: unknown;
}

function track(promise: Promise<Passage | 'timeout'>): Tracked {
  const state: Tracked = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

let t = 0;
let changes: (PauseReason | undefined)[] = [];
const controllers: AbortController[] = [];

function newGate(backoff: GateBackoffs = BACKOFF): ServiceGate {
  return new ServiceGate({ backoff, now: () => t, onChange: (reason) => changes.push(reason) });
}

/** A caller waiting at the gate; its controller is aborted after the test so nothing dangles. */
function caller(gate: ServiceGate): Tracked {
  const controller = new AbortController();
  controllers.push(controller);
  return track(gate.pass(controller.signal));
}

/** What a caller arriving now would get at once: its passage, or 'wait'. */
async function arriving(gate: ServiceGate): Promise<Passage | 'timeout' | 'wait'> {
  const controller = new AbortController();
  const state = track(gate.pass(controller.signal));
  await flush();
  if (state.settled) return state.value ?? 'wait';
  controller.abort();
  await flush();
  return 'wait';
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  t = 1_000;
  changes = [];
});
afterEach(() => {
  for (const controller of controllers.splice(0)) controller.abort();
  vi.useRealTimers();
});

describe('ServiceGate', () => {
  it('lets every caller through with `go` while open', async () => {
    const gate = newGate();
    expect(gate.reason).toBeUndefined();
    const passages = await Promise.all([0, 1, 2].map(() => gate.pass(new AbortController().signal)));
    expect(passages).toEqual(['go', 'go', 'go']);
    expect(changes).toEqual([]);
  });

  it('holds callers after block() and reports the reason once', async () => {
    const gate = newGate();
    gate.block('insufficient_funds', false);
    expect(gate.reason).toBe('insufficient_funds');
    expect(changes).toEqual(['insufficient_funds']);

    const waiters = [caller(gate), caller(gate)];
    await vi.advanceTimersByTimeAsync(25);
    t += 25;
    await flush();
    expect(waiters.map((w) => w.settled)).toEqual([false, false]);
    // Blocking again for the same reason (not from a probe) changes nothing, and reports nothing.
    gate.block('insufficient_funds', false);
    expect(changes).toEqual(['insufficient_funds']);
  });

  it('lets exactly one waiter through as the probe when the probe time is reached; the others keep waiting', async () => {
    const gate = newGate();
    gate.block('circuit_open', false); // probe at t + 20
    const waiters = [caller(gate), caller(gate), caller(gate)];
    await flush();
    t += 19;
    expect(await arriving(gate)).toBe('wait');

    t += 1;
    await vi.advanceTimersByTimeAsync(20); // the gate's wake-up timer fires
    const probes = waiters.filter((w) => w.value === 'probe');
    expect(probes).toHaveLength(1);
    expect(waiters.filter((w) => !w.settled)).toHaveLength(2);
    // A newcomer does not get a second probe while the first is out.
    expect(await arriving(gate)).toBe('wait');
    t += 10_000;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(waiters.filter((w) => !w.settled)).toHaveLength(2);
  });

  it('doubles the probe delay after each failed probe, up to the maximum', async () => {
    const gate = newGate(); // circuit_open: 20 ms, max 50 ms
    gate.block('circuit_open', false);
    const delays: number[] = [];
    for (let round = 0; round < 4; round += 1) {
      const start = t;
      // Find the first instant an arriving caller is made the probe.
      let step = 0;
      for (; step <= 100; step += 1) {
        t = start + step;
        if ((await arriving(gate)) === 'probe') break;
      }
      delays.push(step);
      gate.block('circuit_open', true); // the probe failed
    }
    expect(delays).toEqual([20, 40, 50, 50]);
    // Failed probes of the same reason are not reported as changes.
    expect(changes).toEqual(['circuit_open']);
  });

  it('clear() releases every waiter with `go` and reports undefined', async () => {
    const gate = newGate();
    gate.block('insufficient_funds', false);
    const waiters = [caller(gate), caller(gate), caller(gate)];
    await flush();
    gate.clear();
    await flush();
    expect(waiters.map((w) => w.value)).toEqual(['go', 'go', 'go']);
    expect(gate.reason).toBeUndefined();
    expect(changes).toEqual(['insufficient_funds', undefined]);
    // Clearing an open gate reports nothing.
    gate.clear();
    expect(changes).toEqual(['insufficient_funds', undefined]);
    expect(await arriving(gate)).toBe('go');
  });

  it("a different reason starts again from that reason's initial delay, and is reported", async () => {
    const gate = newGate(); // funds 30 ms, circuit 20 ms
    gate.block('circuit_open', false);
    t += 20;
    expect(await arriving(gate)).toBe('probe');
    gate.block('circuit_open', true); // escalated to 40 ms
    t += 40;
    expect(await arriving(gate)).toBe('probe');
    // The probe reached the service, which said the balance is exhausted.
    gate.block('insufficient_funds', true);
    expect(gate.reason).toBe('insufficient_funds');
    t += 29;
    expect(await arriving(gate)).toBe('wait');
    t += 1;
    expect(await arriving(gate)).toBe('probe');
    gate.block('circuit_open', true);
    t += 19;
    expect(await arriving(gate)).toBe('wait');
    t += 1;
    expect(await arriving(gate)).toBe('probe');
    expect(changes).toEqual(['circuit_open', 'insufficient_funds', 'circuit_open']);
  });

  it('rejects a waiter whose signal is aborted, with the abort reason', async () => {
    const gate = newGate();
    gate.block('circuit_open', false);
    const controller = new AbortController();
    const waiting = track(gate.pass(controller.signal));
    const other = caller(gate);
    await flush();
    const reason = new Error('rebalance');
    controller.abort(reason);
    await flush();
    expect(waiting.settled).toBe(true);
    expect(waiting.error).toBe(reason);
    expect(other.settled).toBe(false);
    // Already aborted: rejected at once, even when the gate is open.
    gate.clear();
    await expect(gate.pass(AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it('releaseProbe() lets another caller probe', async () => {
    const gate = newGate();
    gate.block('insufficient_funds', false);
    t += 30;
    expect(await arriving(gate)).toBe('probe');
    const waiters = [caller(gate), caller(gate)];
    await flush();
    expect(waiters.map((w) => w.settled)).toEqual([false, false]);

    gate.releaseProbe(); // the probe's command was abandoned unsent
    await flush();
    expect(waiters.filter((w) => w.value === 'probe')).toHaveLength(1);
    expect(waiters.filter((w) => !w.settled)).toHaveLength(1);
    expect(gate.reason).toBe('insufficient_funds');
  });

  it('a waiter with a deadline (its expiry, FUNDS_PAUSE_MAX_MS) leaves with `timeout` at it while the gate stays blocked; one without keeps waiting', async () => {
    const gate = newGate({ insufficient_funds: { initialMs: 10_000, maxMs: 10_000 }, circuit_open: { initialMs: 10_000, maxMs: 10_000 } });
    gate.block('insufficient_funds', false);
    const bounded = track(gate.pass(new AbortController().signal, 1, 0, t + 500));
    const unbounded = caller(gate);
    await flush();
    t += 499;
    await vi.advanceTimersByTimeAsync(499);
    expect(bounded.settled).toBe(false);
    t += 1;
    await vi.advanceTimersByTimeAsync(1);
    expect(bounded.value).toBe('timeout');
    expect(unbounded.settled).toBe(false);
    // A deadline already past: at once.
    expect(await gate.pass(new AbortController().signal, 1, 0, t)).toBe('timeout');
    // An open gate lets the caller go whatever its deadline.
    gate.clear();
    expect(await gate.pass(new AbortController().signal, 1, 0, t - 1)).toBe('go');
  });

  it('probes rotate among equally cheap waiters: a probe refused again (its count up) lets the one refused fewer times go next', async () => {
    const gate = newGate();
    gate.block('insufficient_funds', false);
    const a = track(gate.pass(new AbortController().signal, 1, 1));
    const b = track(gate.pass(new AbortController().signal, 1, 0));
    await flush();
    t += 30;
    await vi.advanceTimersByTimeAsync(30);
    expect([a.settled, b.value]).toEqual([false, 'probe']);
    // b's probe refused again: it comes back with one more refusal, and a (fewer) probes next.
    gate.block('insufficient_funds', true);
    const bAgain = track(gate.pass(new AbortController().signal, 1, 2));
    t += 60;
    await vi.advanceTimersByTimeAsync(60);
    expect([a.value, bAgain.settled]).toEqual(['probe', false]);
  });
});

describe('OutageCounter', () => {
  it('reports the circuit open from the threshold-th consecutive failure on', () => {
    const counter = new OutageCounter(3);
    expect([counter.failure(), counter.failure(), counter.failure(), counter.failure()]).toEqual([false, false, true, true]);
  });

  it('a threshold of 1 opens on the first failure', () => {
    expect(new OutageCounter(1).failure()).toBe(true);
  });

  it('a success resets the count', () => {
    const counter = new OutageCounter(2);
    expect(counter.failure()).toBe(false);
    counter.success();
    expect(counter.failure()).toBe(false);
    expect(counter.failure()).toBe(true);
    counter.success();
    expect(counter.failure()).toBe(false);
  });
});

describe('ServiceGate without waiters, and with a lagging clock', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    t = 1_000;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('asks for a probe (onProbeWanted) when the probe is due and nobody waits to make it', async () => {
    let wanted = 0;
    const gate = new ServiceGate({ backoff: BACKOFF, now: () => t, onProbeWanted: () => (wanted += 1) });
    const blocks: PauseReason[] = [];
    const observed = new ServiceGate({ backoff: BACKOFF, now: () => t, onBlock: (r) => blocks.push(r) });
    observed.block('circuit_open', false);
    expect(blocks).toEqual(['circuit_open']);
    observed.close();

    gate.block('circuit_open', false);
    t += 19;
    vi.advanceTimersByTime(19);
    await flush();
    expect(wanted).toBe(0);
    t += 1;
    vi.advanceTimersByTime(1);
    await flush();
    expect(wanted).toBe(1);
    // The command that then arrives is the probe.
    const controller = new AbortController();
    expect(await gate.pass(controller.signal)).toBe('probe');
    gate.close();
  });

  it('re-arms its timer when a waiter wakes before the probe time by its clock', async () => {
    const gate = new ServiceGate({ backoff: BACKOFF, now: () => t });
    gate.block('circuit_open', false); // probe due at t + 20
    const waiter = caller(gate);
    await flush();
    t += 19; // the clock lags the timer by 1 ms
    vi.advanceTimersByTime(20);
    await flush();
    expect(waiter.settled).toBe(false);
    t += 5;
    vi.advanceTimersByTime(5);
    await flush();
    expect(waiter).toMatchObject({ settled: true, value: 'probe' });
    gate.close();
  });

  it('still asks for a probe when its timer fires a little before the probe time by its clock, with nobody waiting', async () => {
    let wanted = 0;
    const gate = new ServiceGate({ backoff: BACKOFF, now: () => t, onProbeWanted: () => (wanted += 1) });
    gate.block('circuit_open', false); // probe due at t + 20
    t += 19; // the monotonic timer fires while the wall clock says 1 ms is left
    vi.advanceTimersByTime(20);
    await flush();
    expect(wanted).toBe(0);
    t += 1;
    vi.advanceTimersByTime(1);
    await flush();
    expect(wanted).toBe(1);
    gate.close();
  });
});

describe('ServiceGate: every pause reason, and a probe time given by the service', () => {
  /** The first instant (ms after now) an arriving caller is made the probe, up to `limit`. */
  async function firstProbeAfter(gate: ServiceGate, limit: number): Promise<number | undefined> {
    const start = t;
    for (let step = 0; step <= limit; step += 1) {
      t = start + step;
      if ((await arriving(gate)) === 'probe') return step;
    }
    return undefined;
  }

  it('lists every reason once, in one exported constant', () => {
    expect([...PAUSE_REASONS].sort()).toEqual(['circuit_open', 'insufficient_funds', 'provider_rejecting', 'throttled']);
  });

  it("`throttled` and `provider_rejecting` use circuit_open's delays when not given their own", async () => {
    for (const reason of ['throttled', 'provider_rejecting'] as const) {
      const gate = newGate(); // circuit_open: 20 ms, max 50 ms
      gate.block(reason, false);
      expect(gate.reason).toBe(reason);
      expect(await firstProbeAfter(gate, 100)).toBe(20);
      gate.close();
    }
  });

  it('block() with a probe time (Retry-After) probes then, not at the initial delay', async () => {
    const gate = newGate({ ...BACKOFF, throttled: { initialMs: 10, maxMs: 5_000 } });
    gate.block('throttled', false, 1_234);
    expect(await firstProbeAfter(gate, 2_000)).toBe(1_234);
  });

  it("a probe time beyond the reason's maximum delay is cut to the maximum (a hostile Retry-After)", async () => {
    const gate = newGate({ ...BACKOFF, throttled: { initialMs: 10, maxMs: 300 } });
    gate.block('throttled', false, 86_400_000);
    expect(await firstProbeAfter(gate, 1_000)).toBe(300);
  });

  it("a waiter is woken for the probe at the given time by the gate's timer", async () => {
    const gate = newGate({ ...BACKOFF, throttled: { initialMs: 10, maxMs: 5_000 } });
    gate.block('throttled', false, 700);
    const waiter = caller(gate);
    t += 699;
    await vi.advanceTimersByTimeAsync(699);
    expect(waiter.settled).toBe(false);
    t += 1;
    await vi.advanceTimersByTimeAsync(1);
    expect(waiter.value).toBe('probe');
  });
});
