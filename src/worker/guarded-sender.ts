import { isProviderError, type ProviderError } from '../provider/provider-error.ts';
import type { FailureClass, ProviderClient, ProviderRequest, ProviderSuccess } from '../provider/types.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { OutageCounter, Passage, ServiceGate } from './service-gate.ts';

/** Failure classes that say "the service is not taking requests", not "this command is wrong". */
const OUTAGE: ReadonlySet<FailureClass> = new Set(['transport', 'throttled', 'ambiguous']);

export type SendOutcome =
  | { readonly kind: 'sent'; readonly success: ProviderSuccess; readonly attempts: number }
  | { readonly kind: 'failed'; readonly error: ProviderError | Error; readonly attempts: number }
  | { readonly kind: 'expired'; readonly expiresAt: number; readonly attempts: number }
  | { readonly kind: 'abandoned'; readonly attempts: number };

/**
 * Called around each call to the service, so the caller can keep the intent ledger: `beforeSend`
 * marks the command as being sent and resolves once the mark is committed (false: do not send —
 * the partition is lost or the lease expired); `notSent` says the call surely did not reach the
 * service and the command goes back to waiting.
 */
export interface SendHooks {
  beforeSend(signal: AbortSignal): Promise<boolean>;
  notSent(): void;
}

export interface GuardedSenderOptions {
  readonly client: ProviderClient;
  readonly gate: ServiceGate;
  readonly outages: OutageCounter;
  readonly rateLimiter: RateLimiter;
  /** `pause`: hold every send until funds return; `fail`: a FAILED result at once. */
  readonly fundsPolicy: 'pause' | 'fail';
  readonly onFailureClass?: (failureClass: FailureClass) => void;
  readonly now?: () => number;
}

/**
 * Sends one command through the client (which retries within its budget), behind the process-wide
 * gate: while funds are exhausted or the circuit is open, the command waits instead of failing,
 * and is itself re-sent when it is chosen as the probe. Only an AbortSignal (shutdown, rebalance)
 * makes a waiting command give up, unsent, so that it is consumed again later.
 */
export class GuardedSender {
  readonly #o: GuardedSenderOptions;
  constructor(options: GuardedSenderOptions) {
    this.#o = options;
  }

  /**
   * `expiresAt` is checked again each time the command gets past the gate: a verification code
   * that waited out a funds pause or an outage is not sent late.
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
        cleared = hooks === undefined || (await hooks.beforeSend(signal));
      } catch {
        cleared = false;
      }
      if (!cleared) {
        if (wasProbe) this.#o.gate.releaseProbe();
        return { kind: 'abandoned', attempts };
      }
      try {
        const success = await this.#o.client.send(request, { correlationId });
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
        this.#o.onFailureClass?.(error.failureClass);
        if (error.failureClass === 'insufficient-funds' && this.#o.fundsPolicy === 'pause') {
          this.#o.gate.block('insufficient_funds', wasProbe);
          hooks?.notSent();
          continue;
        }
        if (OUTAGE.has(error.failureClass)) {
          const open = this.#o.outages.failure();
          if (open || wasProbe) this.#o.gate.block('circuit_open', wasProbe);
          // Keep the command for after the outage only if re-sending it is safe: an ambiguous
          // failure (it may have been sent) is retryable only when the operator allowed that.
          if ((open || wasProbe) && error.retryable) {
            if (error.failureClass !== 'ambiguous') hooks?.notSent();
            continue;
          }
          return { kind: 'failed', error, attempts };
        }
        // The service answered about this command: it is up, and has money unless it said otherwise.
        this.#o.outages.success();
        if (error.failureClass !== 'insufficient-funds') this.#o.gate.clear();
        else if (wasProbe) this.#o.gate.releaseProbe();
        return { kind: 'failed', error, attempts };
      }
    }
  }
}
