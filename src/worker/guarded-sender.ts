import { isProviderError, type ProviderError } from '../provider/provider-error.ts';
import type { AttemptInfo } from '../provider/options.ts';
import type { FailureClass, ProviderClient, ProviderRequest, ProviderSuccess } from '../provider/types.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { OutageCounter, Passage, PauseReason, ServiceGate } from './service-gate.ts';

/** Failure classes that say "the service is not taking requests", not "this command is wrong". */
const OUTAGE: ReadonlySet<FailureClass> = new Set(['transport', 'throttled', 'ambiguous']);

export type SendOutcome =
  | { readonly kind: 'sent'; readonly success: ProviderSuccess; readonly attempts: number }
  | { readonly kind: 'failed'; readonly error: ProviderError | Error; readonly attempts: number }
  | { readonly kind: 'expired'; readonly expiresAt: number; readonly attempts: number }
  /** Given up without a result. `maybeSent`: a call was under way when it was cut (shutdown), so its ledger mark must stay. */
  | { readonly kind: 'abandoned'; readonly attempts: number; readonly maybeSent?: boolean };

/**
 * Called around each call to the service, so the caller can keep the intent ledger: `beforeSend`
 * marks the command as being sent and resolves once the mark is committed (false: do not send —
 * the partition is lost or the lease expired); `notSent` says the call surely did not reach the
 * service and the command goes back to waiting. `onAttempt` observes each HTTP attempt (the
 * command's trace). Each is optional: without the ledger only tracing may need them.
 */
export interface SendHooks {
  readonly beforeSend?: (signal: AbortSignal) => Promise<boolean>;
  readonly notSent?: () => void;
  readonly onAttempt?: (info: AttemptInfo) => void;
  /** Called just before each call to the service starts (after `beforeSend` cleared it): time to send. */
  readonly callStarting?: () => void;
}

export interface GuardedSenderOptions {
  readonly client: ProviderClient;
  readonly gate: ServiceGate;
  readonly outages: OutageCounter;
  readonly rateLimiter: RateLimiter;
  /** `pause`: hold every send until funds return; `fail`: a FAILED result at once. */
  readonly fundsPolicy: 'pause' | 'fail';
  readonly onFailureClass?: (failureClass: FailureClass) => void;
  /**
   * Called when this sender pauses sending for a reason the gate did not have yet, with why in
   * words (the service's code, HTTP status and message, bounded; never a secret), for a warn log.
   */
  readonly onPause?: (reason: PauseReason, why: string) => void;
  readonly now?: () => number;
}

/** What becomes of a failed send: held at the gate and sent again later, or given up. */
type Verdict = 'keep' | 'give-up';

/**
 * Sends one command through the client (which retries within its budget and before the command's
 * expiry), behind the process-wide gate: while funds are exhausted, the circuit is open, the service
 * throttles beyond the retry budget or refuses this client, the command waits instead of failing,
 * and is itself re-sent when it is chosen as the probe. Only an AbortSignal (shutdown, rebalance)
 * makes a waiting command give up, unsent, so that it is consumed again later; a call aborted by
 * the client's close() (shutdown) is given up the same way.
 */
export class GuardedSender {
  readonly #o: GuardedSenderOptions;
  constructor(options: GuardedSenderOptions) {
    this.#o = options;
  }

  /**
   * `expiresAt` is checked again each time the command gets past the gate (a verification code
   * that waited out a pause is not sent late) and is the client's deadline: no retry starts at or
   * after it. A send that ended there without reaching the service is `expired`; one whose last
   * attempt may have reached it stays `failed` (its outcome is unknown).
   */
  async send(request: ProviderRequest, correlationId: string, signal: AbortSignal, expiresAt: number | null = null, hooks?: SendHooks): Promise<SendOutcome> {
    const now = this.#o.now ?? Date.now;
    let attempts = 0;
    for (;;) {
      let passage: Passage | undefined;
      try {
        passage = await this.#o.gate.pass(signal);
        await this.#o.rateLimiter.take(signal);
      } catch {
        if (passage === 'probe') this.#o.gate.releaseProbe();
        return { kind: 'abandoned', attempts };
      }
      const wasProbe = passage === 'probe';
      if (expiresAt !== null && now() >= expiresAt) {
        if (wasProbe) this.#o.gate.releaseProbe();
        return { kind: 'expired', expiresAt, attempts };
      }
      let cleared: boolean;
      try {
        cleared = hooks?.beforeSend === undefined || (await hooks.beforeSend(signal));
      } catch {
        cleared = false;
      }
      if (!cleared) {
        if (wasProbe) this.#o.gate.releaseProbe();
        return { kind: 'abandoned', attempts };
      }
      try {
        hooks?.callStarting?.();
      } catch {
        // An observer's bug must not change what becomes of the command.
      }
      try {
        const success = await this.#o.client.send(request, {
          correlationId,
          ...(expiresAt === null ? {} : { deadline: expiresAt }),
          ...(hooks?.onAttempt === undefined ? {} : { onAttempt: hooks.onAttempt }),
        });
        attempts += success.attempts;
        this.#o.outages.success();
        this.#o.gate.clear();
        return { kind: 'sent', success, attempts };
      } catch (error) {
        if (!isProviderError(error)) {
          if (wasProbe) this.#o.gate.releaseProbe();
          return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)), attempts };
        }
        attempts += error.attempts;
        // Shutdown closed the client under the call: no result; the partition's next owner sends it.
        // Not a sign of an outage, so the breaker does not count it.
        if (error.aborted) {
          if (wasProbe) this.#o.gate.releaseProbe();
          return { kind: 'abandoned', attempts, maybeSent: !error.surelyNotSent };
        }
        this.#o.onFailureClass?.(error.failureClass);
        if (this.#judge(error, wasProbe) === 'keep') {
          // Held for later: if the service surely did not send it (it never got it, or it
          // refused it: 105400, 101301), its ledger mark is withdrawn.
          if (error.surelyNotSent || error.refused) hooks?.notSent?.();
          continue;
        }
        if (expiresAt !== null && error.surelyNotSent && (error.stopReason === 'deadline' || now() >= expiresAt)) {
          return { kind: 'expired', expiresAt, attempts };
        }
        return { kind: 'failed', error, attempts };
      }
    }
  }

  /** Updates the gate and the breaker for one failed call, and says whether its command is kept. */
  #judge(error: ProviderError, wasProbe: boolean): Verdict {
    const { gate, outages } = this.#o;
    if (error.failureClass === 'insufficient-funds' && this.#o.fundsPolicy === 'pause') {
      this.#block('insufficient_funds', wasProbe, error);
      return 'keep';
    }
    if (error.failureClass === 'configuration') {
      // The service answered, so it is up; but it refuses this client or account as a whole, and
      // every other command would get the same answer: pause rather than fail the backlog. The
      // command is kept once and re-sent as the probe; a probe refused again fails its command, so
      // no single command (say, one whose destination has no upstream) can hold the worker forever.
      const refusedAgain = wasProbe && gate.reason === 'provider_rejecting';
      outages.success();
      this.#block('provider_rejecting', wasProbe, error);
      return refusedAgain ? 'give-up' : 'keep';
    }
    if (error.failureClass === 'throttled' && error.stopReason === 'retry-after-exceeds-budget' && error.retryAfterMs !== undefined) {
      // The service told us when to come back, later than the budget allows: it surely has not
      // sent the command, so hold it (and everyone else) until then rather than fail it.
      this.#block('throttled', wasProbe, error, error.retryAfterMs);
      return 'keep';
    }
    if (OUTAGE.has(error.failureClass)) {
      const open = outages.failure();
      if (open || wasProbe) this.#block('circuit_open', wasProbe, error);
      // Keep the command for after the outage only if re-sending it is safe: an ambiguous
      // failure (it may have been sent) is retryable only when the operator allowed that.
      return (open || wasProbe) && error.retryable ? 'keep' : 'give-up';
    }
    // The service answered about this command: it is up, and has money unless it said otherwise.
    outages.success();
    if (error.failureClass !== 'insufficient-funds') gate.clear();
    else if (wasProbe) gate.releaseProbe();
    return 'give-up';
  }

  #block(reason: PauseReason, wasProbe: boolean, error: ProviderError, probeInMs?: number): void {
    if (this.#o.gate.reason !== reason) {
      const status = error.httpStatus === undefined ? '' : ` (HTTP ${error.httpStatus})`;
      const said = error.providerMessage === '' ? '' : `: ${error.providerMessage}`;
      try {
        this.#o.onPause?.(reason, `${error.code}${status}${said}`);
      } catch {
        // An observer's bug must not change what becomes of the command.
      }
    }
    this.#o.gate.block(reason, wasProbe, probeInMs);
  }
}
