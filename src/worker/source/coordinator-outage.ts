import { BROKER_OUTAGE_LIMIT_MS, isCoordinatorNotFound } from '../../kafka/coordinator-loss.ts';

/**
 * How long a consumer may go on restarting after coordinator lookups no broker answered, counted
 * from the first such crash since it last joined its group: past it the worker exits (code 1) as it
 * did before it restarted in place, and Kubernetes restarts the pod. Long enough for a single
 * broker's restart or a short cluster outage; a lookup that never gets an answer (brokers gone for
 * good, an address that is not Kafka) ends in a crash-looping pod rather than in one that stays
 * unready forever. A lookup a broker refuses (a group missing from the ACLs) is not restarted at
 * all (coordinator-loss.ts).
 */
export const COORDINATOR_OUTAGE_LIMIT_MS = BROKER_OUTAGE_LIMIT_MS;

/**
 * Decides whether kafkajs restarts a consumer after a retriable crash (its `restartOnFailure`).
 * Every crash other than "no broker answered the coordinator lookup" restarts as kafkajs would.
 */
export class CoordinatorOutage {
  readonly #limitMs: number;
  readonly #now: () => number;
  #since: number | undefined;

  constructor(limitMs = COORDINATOR_OUTAGE_LIMIT_MS, now: () => number = Date.now) {
    this.#limitMs = limitMs;
    this.#now = now;
  }

  /** The consumer joined its group: an outage so far is over. */
  joined(): void {
    this.#since = undefined;
  }

  /** Milliseconds since the first coordinator-lookup crash since the last join, or undefined. */
  get outageMs(): number | undefined {
    return this.#since === undefined ? undefined : this.#now() - this.#since;
  }

  mayRestart(error: unknown): boolean {
    if (!isCoordinatorNotFound(error)) return true;
    this.#since ??= this.#now();
    return this.#now() - this.#since <= this.#limitMs;
  }
}
