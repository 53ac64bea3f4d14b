/**
 * A coordinator lookup that no broker answered: kafkajs 2.2.4 ends it with
 * KafkaJSGroupCoordinatorNotFound, a non-retriable error, and a consumer that meets it crashes for
 * good (its restart is only for retriable causes; tulios/kafkajs#1630, open). It is what a single
 * broker's restart, or a whole cluster down for a moment, looks like: the broker closes its
 * connections as it shuts down and kafkajs gives up the lookup at once. The worker then had to
 * exit and be restarted by Kubernetes (a fresh process, its calls under way `UNKNOWN` to the next
 * owner, and the kubelet's crash back-off after a few). kafkajs.ts shows the consumer's crash
 * decision (and nothing else: the admin and the producers see the error as kafkajs made it) a
 * restartable error instead, so the consumer restarts itself and rejoins once a broker answers;
 * the worker bounds how long it lets that go on (source-wiring.ts, coordinator-outage.ts).
 *
 * kafkajs ends the lookup the same way when a broker did answer, refusing it
 * (GROUP_AUTHORIZATION_FAILED: the group is missing from the ACLs). Retrying will not change that,
 * so the crash stays final and names the refusal: the worker exits at once, as before. The brokers'
 * refusals are kept per lookup key (LookupRefusals, fed from kafkajs's Broker.findGroupCoordinator)
 * until a broker answers that key.
 */

const NOT_FOUND = 'KafkaJSGroupCoordinatorNotFound';

/**
 * How long the consumer rides out an outage of every broker in place before it gives up: its fetch
 * loop waits for a broker that long (consumer-crashes.ts), and a consumer restarted after coordinator
 * lookups no broker answered goes on restarting that long (worker/source/coordinator-outage.ts). Long
 * enough for a broker's crash and restart (tens of seconds: its log recovery) or a short cluster
 * outage; brokers gone for good end in a crash-looping pod rather than in one that waits forever.
 */
export const BROKER_OUTAGE_LIMIT_MS = 5 * 60_000;

/** `error` and its causes, outermost first (pure). */
export function errorChain(error: unknown): object[] {
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
  return errorChain(error).some((e) => (e as { name?: unknown }).name === NOT_FOUND);
}

/**
 * A broker's answer to a lookup that retrying will not change: an authorization failure (kafkajs
 * names protocol errors by their Kafka code: GROUP_AUTHORIZATION_FAILED,
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED). Pure.
 */
export function isRefusal(error: unknown): boolean {
  return kafkaErrorType(error)?.endsWith('_AUTHORIZATION_FAILED') === true;
}

/** The Kafka error code's name kafkajs gives a protocol error (`type`), if `error` is one. */
function kafkaErrorType(error: unknown): string | undefined {
  const type = typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? type : undefined;
}

/**
 * What a consumer's crash is, for its restart: `restart` (a lookup no broker answered: restart in
 * place), `refused` (a broker refused the lookup: final, naming the refusal), or `as-is` (kafkajs
 * decides, as it always did). Pure.
 */
export function crashVerdict(error: unknown, refusal: unknown): 'restart' | 'refused' | 'as-is' {
  if (!isCoordinatorNotFound(error)) return 'as-is';
  return refusal === undefined ? 'restart' : 'refused';
}

/**
 * A coordinator's answers that it cannot serve the group yet (kafkajs 2.2.4's names of Kafka's
 * error codes 14 and 15). NOT_COORDINATOR_FOR_GROUP (16) kafkajs takes for a rebalance and
 * retries itself; once those retries run out it crashes as it did.
 */
const COORDINATOR_NOT_READY = new Set(['GROUP_LOAD_IN_PROGRESS', 'GROUP_COORDINATOR_NOT_AVAILABLE']);

/**
 * Whether a failed rejoin (kafkajs's joinAndSync: the coordinator lookup, JoinGroup, SyncGroup) is
 * tried again in place rather than crashing the consumer (pure). Yes for what a broker restarting,
 * killed or a coordinator moving looks like, where the failed request changed nothing in the
 * group: a lookup no broker answered (unless a broker refused it; kafkajs ends it so also when
 * every broker timed out), a coordinator's answer that it is loading or not available, and a
 * connection refused (ECONNREFUSED: nothing was written on it, so no JoinGroup went out; a broker
 * killed refuses connections until it is back). No for anything else, a connection lost under a
 * request or a timeout of the JoinGroup included (it may have landed, and the group may go on
 * with this member in it while it waits): those crash as before, and the crash ends the process's
 * claims at once.
 */
export function mayRetryJoin(error: unknown, refusal: unknown): boolean {
  if (refusal !== undefined || errorChain(error).some(isRefusal)) return false;
  if (isCoordinatorNotFound(error) || isConnectionRefused(error)) return true;
  return COORDINATOR_NOT_READY.has(kafkaErrorType(error) ?? '');
}

/** Whether `error` is (or was caused by) a connection kafkajs could not open because the broker refused it (pure). */
export function isConnectionRefused(error: unknown): boolean {
  return errorChain(error).some((e) => (e as { name?: unknown }).name === 'KafkaJSConnectionError' && (e as { code?: unknown }).code === 'ECONNREFUSED');
}

/** kafkajs's errors of a broker that could not be reached or dropped the connection. */
const UNREACHABLE = new Set(['KafkaJSNoBrokerAvailableError', 'KafkaJSConnectionError', 'KafkaJSConnectionClosedError']);

/**
 * Whether `error` (or a cause of it) says no broker could be reached: none left in the pool, a
 * connection refused, reset or timed out, or closed under a request (pure). What a fetch loop meets
 * while every broker is down, whichever of its requests (metadata, fetch, heartbeat) meets it first.
 */
export function isBrokerUnreachable(error: unknown): boolean {
  return errorChain(error).some((e) => UNREACHABLE.has(String((e as { name?: unknown }).name)));
}

/** Lookup keys whose refusals are kept at once; past it the oldest is dropped (at worst a refusal then reads as an outage). */
const MAX_REFUSALS = 1_000;

/**
 * The last refusal a broker answered to the coordinator lookup of each key (coordinator type and
 * group or transactional id), until a broker answers a lookup of that key. Failures that are not
 * refusals (a connection refused, a coordinator not available yet) leave it: with several brokers,
 * one refusing and another unreachable is still a refusal. Bounded.
 */
export class LookupRefusals {
  readonly #byKey = new Map<string, unknown>();

  /** A broker's answer to a lookup failed with `error`. */
  failed(key: string, error: unknown): void {
    if (!isRefusal(error)) return;
    this.#byKey.delete(key);
    this.#byKey.set(key, error);
    if (this.#byKey.size > MAX_REFUSALS) this.#byKey.delete(this.#byKey.keys().next().value as string);
  }

  /** A broker answered a lookup of `key`: whatever refused it before does no more. */
  answered(key: string): void {
    this.#byKey.delete(key);
  }

  /** The refusal of the lookups of `key` since a broker last answered one, if any. */
  refusal(key: string): unknown {
    return this.#byKey.get(key);
  }

  get size(): number {
    return this.#byKey.size;
  }
}
