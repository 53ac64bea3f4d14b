/**
 * A coordinator lookup that no broker answered: kafkajs 2.2.4 ends it with
 * KafkaJSGroupCoordinatorNotFound, a non-retriable error, and a consumer that meets it crashes for
 * good (its restart is only for retriable causes; tulios/kafkajs#1630, open). It is what a single
 * broker's restart, or a whole cluster down for a moment, looks like: the broker closes its
 * connections as it shuts down and kafkajs gives up the lookup at once. The worker then had to
 * exit and be restarted by Kubernetes (a fresh process, its calls under way `UNKNOWN` to the next
 * owner, and the kubelet's crash back-off after a few). Marked retriable here (kafkajs.ts, for
 * every lookup), the consumer restarts itself and rejoins once a broker answers; the worker bounds
 * how long it lets that go on (source-wiring.ts, coordinator-outage.ts).
 *
 * kafkajs ends the lookup the same way when a broker did answer, with a refusal that retrying will
 * not change (GROUP_AUTHORIZATION_FAILED: the group is missing from the ACLs). That one stays
 * non-retriable, so the worker exits at once naming it, as before: the last answer of each lookup
 * is kept (LookupRefusals, fed from kafkajs's Broker.findGroupCoordinator) to tell them apart.
 *
 * Only the original error is marked: kafkajs's retriers wrap it in a KafkaJSNonRetriableError
 * (bail), which stays as it is, so an admin's or a producer's request fails exactly as before. The
 * consumer alone looks at the original cause to decide on its restart.
 */

const NOT_FOUND = 'KafkaJSGroupCoordinatorNotFound';

function causes(error: unknown): object[] {
  const chain: object[] = [];
  let current: unknown = error;
  // kafkajs nests a cause or two (retrier → runner); 8 is far beyond, and ends a cycle.
  while (typeof current === 'object' && current !== null && chain.length < 8) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

/** Whether `error`, or a cause of it, is kafkajs's "no broker answered the coordinator lookup" (pure). */
export function isCoordinatorNotFound(error: unknown): boolean {
  return causes(error).some((e) => (e as { name?: unknown }).name === NOT_FOUND);
}

/**
 * Marks the lookup's own error (not its wrappers) retriable, so a consumer restarts after it;
 * unless a broker refused the lookup (`refusal`, from LookupRefusals.take).
 */
export function markCoordinatorNotFoundRetriable(error: unknown, refusal?: unknown): void {
  if (refusal !== undefined) return;
  for (const e of causes(error)) if ((e as { name?: unknown }).name === NOT_FOUND) (e as { retriable?: unknown }).retriable = true;
}

/** A broker's answer that retrying will not change: kafkajs marks its protocol errors per code (pure). */
export function isRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retriable?: unknown }).retriable === false;
}

/** Lookups whose refusals are kept at once; past it the oldest is dropped (at worst a refusal then reads as an outage). */
const MAX_REFUSALS = 1_000;

/**
 * The last refusal a broker answered to the coordinator lookup of each key (coordinator type and
 * group or transactional id), until that lookup ends: bounded, and emptied by every answer that is
 * not a refusal.
 */
export class LookupRefusals {
  readonly #byKey = new Map<string, unknown>();

  /** A broker's answer to a lookup failed with `error`. */
  failed(key: string, error: unknown): void {
    this.#byKey.delete(key);
    if (!isRefusal(error)) return;
    this.#byKey.set(key, error);
    if (this.#byKey.size > MAX_REFUSALS) this.#byKey.delete(this.#byKey.keys().next().value as string);
  }

  answered(key: string): void {
    this.#byKey.delete(key);
  }

  /** The refusal that ended the lookup of `key`, if a broker refused it; forgets it. */
  take(key: string): unknown {
    const refusal = this.#byKey.get(key);
    this.#byKey.delete(key);
    return refusal;
  }

  get size(): number {
    return this.#byKey.size;
  }
}
