import type { SendFootprint } from '../../contracts/validate.ts';
import { abortableDelay, deferred } from '../waiting.ts';
import { RefusalScopes, type Admission, type HoldTicket, type PausedRoute, type RefusalScope, type RefusalScopeSettings } from './refusal-scopes.ts';

/** What the holds look like now: the routes paused and the cost ceiling, for metrics. */
export interface HoldsSnapshot {
  readonly routes: readonly PausedRoute[];
  readonly costCeiling: number | undefined;
}

/**
 * The clock and the waiting around RefusalScopes: a held command waits here until its next chance
 * (a probe time, the end of its wait) or until the holds change, and gives up when its signal is
 * aborted. Everything that decides is in RefusalScopes.
 */
export class RefusalHolds {
  readonly #scopes: RefusalScopes;
  readonly #now: () => number;
  readonly #onChange: (snapshot: HoldsSnapshot) => void;
  #wake = deferred();
  #seenVersion = 0;

  constructor(options: { settings: RefusalScopeSettings; now?: () => number; onChange?: (snapshot: HoldsSnapshot) => void }) {
    this.#scopes = new RefusalScopes(options.settings);
    this.#now = options.now ?? Date.now;
    this.#onChange = options.onChange ?? (() => undefined);
  }

  get snapshot(): HoldsSnapshot {
    return { routes: this.#scopes.pausedRoutes, costCeiling: this.#scopes.costCeiling };
  }

  ticket(footprint: SendFootprint): HoldTicket {
    return this.#scopes.ticket(footprint);
  }

  admit(ticket: HoldTicket): Admission {
    const wasWaiting = this.#scopes.isWaiting(ticket);
    const admission = this.#scopes.admit(ticket, this.#now());
    // A waiter that went or gave up may have been the one others deferred to (the refused
    // command, the cheapest at the ceiling): let them look again.
    this.#changed(wasWaiting && admission.kind !== 'wait');
    return admission;
  }

  /** Waits until `untilMs`, a change of the holds, or the signal (which rejects). */
  async wait(ticket: HoldTicket, untilMs: number, signal: AbortSignal): Promise<void> {
    try {
      await abortableDelay(untilMs - this.#now(), signal, this.#wake.promise);
    } catch (error) {
      this.release(ticket);
      throw error;
    }
  }

  refused(ticket: HoldTicket, code: string): RefusalScope {
    const scope = this.#scopes.refused(ticket, code, this.#now());
    this.#changed(true);
    return scope;
  }

  succeeded(ticket: HoldTicket): void {
    // Waiters care about a success only when it freed a probe or may decide a refused command.
    const wake = ticket.probeOf !== undefined || this.#scopes.costCeiling !== undefined;
    this.#scopes.succeeded(ticket, this.#now());
    this.#changed(wake);
  }

  release(ticket: HoldTicket): void {
    this.#scopes.release(ticket);
    this.#changed(true);
  }

  /** The account-wide funds pause took over: the cost ceiling no longer applies. */
  clearCostCeiling(): void {
    this.#scopes.clearCostCeiling();
    this.#changed(true);
  }

  close(): void {
    this.#notify();
  }

  /** Wakes the waiters when a probe may have been freed or a hold lifted; reports a changed snapshot. */
  #changed(wake = false): void {
    const version = this.#scopes.version;
    if (version !== this.#seenVersion) {
      this.#seenVersion = version;
      try {
        this.#onChange(this.snapshot);
      } catch {
        // An observer's bug must not change what becomes of a command.
      }
      this.#notify();
    } else if (wake) this.#notify();
  }

  #notify(): void {
    const current = this.#wake;
    this.#wake = deferred();
    current.resolve();
  }
}
