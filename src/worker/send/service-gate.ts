import { abortableDelay, deferred } from '../waiting.ts';

/** A wait without a deadline still needs a timer for abortableDelay: longer than any pause (setTimeout's own maximum). */
const NEVER_MS = 2_147_483_647;

/**
 * Why all sending is held back. These are the account-wide pauses: the cause is a property of
 * the account or of the service, not of a command or a route (those narrower pauses are in
 * refusal-scopes.ts, and widen to these only on evidence):
 * - `insufficient_funds`: the service answered 105400 even for a command of the smallest cost.
 * - `circuit_open`: BREAKER_FAILURE_THRESHOLD consecutive outage-class failures.
 * - `throttled`: a 429/503 asked us to come back later than the retry budget allows.
 * - `provider_rejecting`: the service refuses this client or account as a whole: 401/403/404/407
 *   without an envelope (revoked key, wrong URL, proxy), or 101301 (no upstream) on
 *   ROUTE_ACCOUNT_WIDE_AFTER distinct routes with no send succeeding in between.
 * One list, so that metrics, health and logs can enumerate them without repeating it.
 */
export const PAUSE_REASONS = ['insufficient_funds', 'circuit_open', 'throttled', 'provider_rejecting'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

/** One line per reason, for the log line that announces a pause. */
export const PAUSE_DESCRIPTIONS: Readonly<Record<PauseReason, string>> = {
  insufficient_funds: 'account balance exhausted (105400): consumption paused; probing until a send succeeds',
  circuit_open: 'messaging service unavailable: circuit open, consumption paused; probing',
  throttled: 'messaging service asked to wait longer than the retry budget (429/503 Retry-After): consumption paused until then',
  provider_rejecting:
    'messaging service refuses this client or account (401/403/404/407, or 101301 on several routes at once): consumption paused; probing — check the access key, base URL and account',
};

export interface GateBackoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

/** `throttled` and `provider_rejecting` fall back to `circuit_open`'s probe delays when not given. */
export type GateBackoffs = Record<'insufficient_funds' | 'circuit_open', GateBackoff> & Partial<Record<PauseReason, GateBackoff>>;

export type Passage = 'go' | 'probe';

/**
 * Who probes a blocked gate: the cheapest caller, so that after a 105400 the probe is one the
 * balance may cover; among equally cheap ones the one refused fewest times, so that a short
 * outage of funds spends first requests (the command is kept) rather than second ones (it fails).
 */
interface ProbeRank {
  readonly costUnits: number;
  readonly refusals: number;
}

interface Blocked {
  readonly reason: PauseReason;
  readonly delayMs: number;
  readonly probeAt: number;
  probing: boolean;
}

/**
 * Holds every send while the service cannot usefully take one (any of PAUSE_REASONS).
 * While blocked, exactly one caller at a time is let through as a probe once the probe time is
 * reached; its outcome clears the gate or blocks again with a doubled delay (capped). Everything
 * else waits, keeping its command: nothing is failed while the cause is outside the command.
 */
export class ServiceGate {
  #blocked: Blocked | undefined;
  readonly #backoff: GateBackoffs;
  readonly #onChange: (reason: PauseReason | undefined) => void;
  readonly #onBlock: (reason: PauseReason) => void;
  readonly #onProbeWanted: () => void;
  readonly #now: () => number;
  #waiting = 0;
  /** Callers in `pass`, with their expected cost: the cheapest probes. */
  readonly #callers = new Map<symbol, ProbeRank>();
  #wake: { promise: Promise<void>; resolve: () => void } = deferred();
  #timer: NodeJS.Timeout | undefined;

  /**
   * - `onChange`: the reason changed (blocked for a new reason, or cleared).
   * - `onBlock`: every time sends are (re-)blocked, e.g. to pause consumption.
   * - `onProbeWanted`: a probe is due but nobody is waiting to make it (the command that tripped
   *   the gate was not kept, or every waiter gave up), e.g. to resume consumption so the next
   *   command can probe. Without it a blocked gate with no waiters would stay blocked forever.
   */
  constructor(options: {
    backoff: GateBackoffs;
    onChange?: (reason: PauseReason | undefined) => void;
    onBlock?: (reason: PauseReason) => void;
    onProbeWanted?: () => void;
    now?: () => number;
  }) {
    this.#backoff = options.backoff;
    this.#onChange = options.onChange ?? (() => undefined);
    this.#onBlock = options.onBlock ?? (() => undefined);
    this.#onProbeWanted = options.onProbeWanted ?? (() => undefined);
    this.#now = options.now ?? Date.now;
  }

  get reason(): PauseReason | undefined {
    return this.#blocked?.reason;
  }

  /**
   * Waits until the caller may send: `go` when open, `probe` when chosen to test a blocked service,
   * `timeout` when the gate is still blocked at `untilMs` (the caller's expiry, or how long it may
   * wait for the pause). The probe is the cheapest caller waiting (`costUnits`, billed units
   * expected; then the fewest `refusals` so far, see ProbeRank): after a 105400 the one most likely
   * to be affordable tells whether funds are back, never the largest forever, and a probe refused
   * again lets the next one as cheap go first.
   */
  async pass(signal: AbortSignal, costUnits = 1, refusals = 0, untilMs = Infinity): Promise<Passage | 'timeout'> {
    // The open gate (every send's path) registers nobody.
    signal.throwIfAborted();
    if (this.#blocked === undefined) return 'go';
    if (this.#now() >= untilMs) return 'timeout';
    const me = Symbol('caller');
    const rank: ProbeRank = { costUnits, refusals };
    this.#callers.set(me, rank);
    try {
      // Not a retry loop (so not src/retry.ts): nothing is attempted again here; each turn waits for
      // the gate's next wake-up (cleared, a probe due, a probe released) and looks again.
      for (;;) {
        signal.throwIfAborted();
        const blocked = this.#blocked;
        if (blocked === undefined) return 'go';
        if (!blocked.probing && this.#now() >= blocked.probeAt && this.#first(rank)) {
          blocked.probing = true;
          return 'probe';
        }
        if (this.#now() >= untilMs) return 'timeout';
        this.#waiting += 1;
        try {
          await abortableDelay(untilMs === Infinity ? NEVER_MS : untilMs - this.#now(), signal, this.#wake.promise);
        } finally {
          this.#waiting -= 1;
        }
      }
    } finally {
      this.#callers.delete(me);
    }
  }

  /**
   * `pass` without waiting, for a command that has another account to go to: `go` when open,
   * `probe` when a probe is due and no waiting caller ranks before it, else `closed`.
   */
  passNow(costUnits = 1, refusals = 0): Passage | 'closed' {
    const blocked = this.#blocked;
    if (blocked === undefined) return 'go';
    if (!blocked.probing && this.#now() >= blocked.probeAt && this.#first({ costUnits, refusals })) {
      blocked.probing = true;
      return 'probe';
    }
    return 'closed';
  }

  /** Whether no caller ranks before this one: cheaper, or as cheap and refused fewer times. */
  #first(rank: ProbeRank): boolean {
    for (const other of this.#callers.values()) {
      if (other.costUnits < rank.costUnits || (other.costUnits === rank.costUnits && other.refusals < rank.refusals)) return false;
    }
    return true;
  }

  /**
   * A send failed for a reason outside the command. `wasProbe` escalates the delay. `probeInMs`
   * (a Retry-After) sets the next probe time instead, capped at the reason's maximum delay.
   */
  block(reason: PauseReason, wasProbe: boolean, probeInMs?: number): void {
    const previous = this.#blocked;
    // Already blocked for this reason: only a failed probe moves the next probe further out.
    if (previous?.reason === reason && !wasProbe) return;
    const { initialMs, maxMs } = this.#backoffOf(reason);
    // Not src/retry.ts's backoff: the delay doubles from the previous one (which a Retry-After may
    // have set), without jitter, and it schedules the one probe rather than retrying a caller's call.
    const delayMs =
      probeInMs !== undefined && Number.isFinite(probeInMs)
        ? Math.min(maxMs, Math.max(0, probeInMs))
        : previous?.reason === reason
          ? Math.min(maxMs, previous.delayMs * 2)
          : initialMs;
    this.#blocked = { reason, delayMs, probeAt: this.#now() + delayMs, probing: false };
    if (previous?.reason !== reason) this.#onChange(reason);
    this.#onBlock(reason);
    this.#schedule(delayMs);
  }

  #backoffOf(reason: PauseReason): GateBackoff {
    return this.#backoff[reason] ?? this.#backoff.circuit_open;
  }

  /** A send went through (or the service answered with a command-specific error): open the gate. */
  clear(): void {
    if (this.#blocked === undefined) return;
    this.#blocked = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#onChange(undefined);
    this.#notify();
  }

  /** The probe could not be made (its command was abandoned): let another caller probe. */
  releaseProbe(): void {
    if (this.#blocked !== undefined) {
      this.#blocked.probing = false;
      this.#notify();
      this.#wantProbeIfIdle();
    }
  }

  #schedule(delayMs: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        // Timers run on a monotonic clock, `now` is the wall clock: the timer can fire a little
        // before the probe time by `now`. Then wait out the rest rather than miss the probe.
        const blocked = this.#blocked;
        if (blocked !== undefined && !blocked.probing && this.#now() < blocked.probeAt) {
          this.#schedule(blocked.probeAt - this.#now());
          return;
        }
        this.#notify();
        this.#wantProbeIfIdle();
      },
      Math.max(0, delayMs),
    );
    this.#timer.unref();
  }

  /** A due probe with nobody waiting to make it. Checked after waiters had a turn to react. */
  #wantProbeIfIdle(): void {
    setImmediate(() => {
      const blocked = this.#blocked;
      if (blocked !== undefined && !blocked.probing && this.#waiting === 0 && this.#now() >= blocked.probeAt) this.#onProbeWanted();
    });
  }

  #notify(): void {
    const current = this.#wake;
    this.#wake = deferred();
    current.resolve();
  }

  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#notify();
  }
}

/**
 * Counts consecutive outage-class failures (transport, throttled, ambiguous); any answer from a
 * working service resets it. `failure()` returns true when the threshold is reached.
 */
export class OutageCounter {
  #consecutive = 0;
  readonly #threshold: number;
  constructor(threshold: number) {
    this.#threshold = threshold;
  }
  failure(): boolean {
    this.#consecutive += 1;
    return this.#consecutive >= this.#threshold;
  }
  success(): void {
    this.#consecutive = 0;
  }
}
