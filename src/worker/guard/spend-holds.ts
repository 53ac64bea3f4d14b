/**
 * The waiting around SpendCap: a send the caps have no room for waits here (its command kept, not
 * failed) until a window frees room, a send in flight settles, its command expires, or its signal
 * is aborted (shutdown, rebalance: it is consumed again later). The first wait of a pause and the
 * first send after it are reported (the `spend_cap` pause: metric, log line).
 */
import type { SendFootprint } from '../../contracts/validate.ts';
import type { MessageReport } from '../../provider/types.ts';
import { abortableDelay, deferred } from '../waiting.ts';
import { SPEND_WINDOWS, SpendCap, type SpendCapSettings, type SpendWindowName } from './spend-cap.ts';

/** What the pause looks like, for its log line and metrics. */
export interface SpendPause {
  readonly window: SpendWindowName;
  /** This process's spend in the window and its cap, in micro-units. */
  readonly spent: bigint;
  readonly cap: bigint;
  /** When room is expected (undefined: when a send in flight settles). */
  readonly untilMs: number | undefined;
}

export interface SpendObserver {
  /** Sending paused by a cap (`pause`), or resumed (undefined). */
  onPause(pause: SpendPause | undefined): void;
  /** Spend and caps per window changed (after a send, or a new share). */
  onSpend(snapshot: Readonly<Record<SpendWindowName, { spent: bigint; cap: bigint | undefined }>>): void;
}

/** How long a waiter for a settling send looks again at most (a send in flight ends within its own timeouts). */
const SETTLE_RECHECK_MS = 1_000;

export class SpendHolds {
  readonly #cap: SpendCap;
  readonly #now: () => number;
  readonly #observer: SpendObserver | undefined;
  #wake = deferred();
  #paused = false;

  constructor(options: { settings: SpendCapSettings; now?: () => number; observer?: SpendObserver }) {
    this.#now = options.now ?? Date.now;
    this.#cap = new SpendCap(options.settings, this.#now());
    this.#observer = options.observer;
  }

  get paused(): boolean {
    return this.#paused;
  }

  setShare(owned: number, total: number): void {
    this.#cap.setShare(owned, total);
    this.#report();
    this.#notify();
  }

  /**
   * Waits for room for this send and reserves its estimate: returns the estimate to `settle`
   * with, or `expired` when `expiresAt` came first. Rejects with the signal's reason when aborted.
   */
  async take(footprint: SendFootprint, signal: AbortSignal, expiresAt: number | null): Promise<bigint | 'expired'> {
    for (;;) {
      signal.throwIfAborted();
      const now = this.#now();
      if (expiresAt !== null && now >= expiresAt) return 'expired';
      const admission = this.#cap.admit(footprint, now);
      if (admission.kind === 'go') {
        this.#cap.reserve(admission.estimate);
        this.#setPaused(undefined);
        return admission.estimate;
      }
      // Waiting for the first price (one send at a time until an answer tells one) is no pause at a cap:
      // neither reported nor counted as one (at start-up it read "sending paused (spend_cap): 0.000000 spent").
      const cap = this.#cap.cap(admission.window) ?? 0n;
      if (admission.priceUnknown !== true)
        this.#setPaused({ window: admission.window, spent: this.#cap.spent(admission.window, now), cap, untilMs: admission.untilMs });
      const until = Math.min(admission.untilMs ?? now + SETTLE_RECHECK_MS, expiresAt ?? Infinity);
      await this.#wait(until, signal);
    }
  }

  /** See SpendCap.settle; wakes the waiters (room may have been freed). */
  settle(estimate: bigint, charged: readonly MessageReport[] | 'maybe' | 'none', units = 1): void {
    this.#cap.settle(estimate, charged, this.#now(), units);
    this.#report();
    this.#notify();
  }

  close(): void {
    this.#notify();
  }

  #wait(untilMs: number, signal: AbortSignal): Promise<void> {
    return abortableDelay(untilMs - this.#now(), signal, this.#wake.promise);
  }

  #setPaused(pause: SpendPause | undefined): void {
    if ((pause !== undefined) === this.#paused) return;
    this.#paused = pause !== undefined;
    try {
      this.#observer?.onPause(pause);
    } catch {
      // An observer's bug must not change what becomes of a command.
    }
  }

  #report(): void {
    if (this.#observer === undefined) return;
    const now = this.#now();
    const snapshot = Object.fromEntries(SPEND_WINDOWS.map((w) => [w, { spent: this.#cap.spent(w, now), cap: this.#cap.cap(w) }])) as Record<
      SpendWindowName,
      { spent: bigint; cap: bigint | undefined }
    >;
    try {
      this.#observer.onSpend(snapshot);
    } catch {
      // An observer's bug must not change what becomes of a command.
    }
  }

  #notify(): void {
    const current = this.#wake;
    this.#wake = deferred();
    current.resolve();
  }
}

/**
 * One send's place at the spend caps: before each call `take` waits for room and reserves the
 * call's estimate; `settle` replaces the reservation by what was charged, once. Without caps both
 * do nothing.
 */
export class SpendTicket {
  readonly #holds: SpendHolds | undefined;
  #reserved: bigint | undefined;
  /** The call's billed units (its footprint's). */
  #units = 1;

  constructor(holds: SpendHolds | undefined) {
    this.#holds = holds;
  }

  /**
   * Resolves once the call has room (reserved) or its command has expired (nothing reserved: the
   * caller's expiry check follows); rejects when the signal is aborted.
   */
  async take(footprint: SendFootprint, signal: AbortSignal, expiresAt: number | null): Promise<void> {
    if (this.#holds === undefined) return;
    // Taken again for another pass that made no call (the gate closed while it waited for its
    // mark): what the last pass reserved goes back first, or it would stay reserved for good.
    this.settle('none');
    const room = await this.#holds.take(footprint, signal, expiresAt);
    if (room !== 'expired') this.#reserved = room;
    this.#units = footprint.costUnits;
  }

  /** What the call was charged: its reports, `maybe` (unknown: the estimate counts) or `none` (surely not sent). */
  settle(charged: readonly MessageReport[] | 'maybe' | 'none'): void {
    if (this.#reserved === undefined) return;
    this.#holds?.settle(this.#reserved, charged, this.#units);
    this.#reserved = undefined;
  }
}
