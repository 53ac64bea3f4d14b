import type { Checks, RequestInfo } from './invariants.ts';
import type { Prng } from './prng.ts';

/**
 * How a call ends: sent; a business failure (the service answered: not sent, FAILED); a timeout
 * after the request may have reached the service (UNKNOWN); a transport failure that surely did
 * not reach it (the handler keeps the command or fails it).
 */
export type Answer = 'sent' | 'business-failure' | 'timeout' | 'transport';

export interface Call {
  readonly answer: Answer;
  /** When the answer arrives, in ms from the call's start. */
  readonly latencyMs: number;
  /** The request may have reached the service. */
  readonly reached: boolean;
  /**
   * The client retried an ambiguous attempt within this call (PROVIDER_RETRY_AMBIGUOUS) before the
   * answer: the call may have reached the service whatever its answer says (provider-error.ts).
   */
  readonly earlierAmbiguous: boolean;
}

/** The messaging service: every call is recorded (and checked) as it starts, with whether it may reach the service. */
export class Service {
  readonly #prng: Prng;
  readonly #checks: Checks;
  requests = 0;

  constructor(prng: Prng, checks: Checks) {
    this.#prng = prng;
    this.#checks = checks;
  }

  call(request: RequestInfo, retryAmbiguous = false): Call {
    const prng = this.#prng;
    const answer = prng.weighted<Answer>({ sent: 0.62, 'business-failure': 0.08, timeout: 0.12, transport: 0.18 });
    // Retries allowed: a refused connection now and then follows an attempt that timed out.
    const earlierAmbiguous = retryAmbiguous && answer === 'transport' && prng.chance(0.3);
    const reached = answer !== 'transport' || earlierAmbiguous;
    if (reached) this.requests += 1;
    this.#checks.request(request, reached);
    const latencyMs = answer === 'timeout' ? prng.int(60, 200) : answer === 'transport' ? prng.int(1, 30) : prng.int(2, 80);
    return { answer, latencyMs, reached, earlierAmbiguous };
  }
}
