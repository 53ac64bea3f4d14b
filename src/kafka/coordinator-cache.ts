/**
 * Which broker coordinates a group or a transactional id, remembered per kafkajs cluster.
 *
 * kafkajs 2.2.4 asks the cluster (a FindCoordinator round trip) before every transactional
 * request: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn each find the transaction coordinator,
 * and sendOffsets finds the group's too. A ledger mark's transaction is then 5 round trips instead
 * of 3, a result transaction 9 instead of 5, and FindCoordinator was the most frequent request the
 * worker sent (17,809 in 32 s for 200 codes a second, against 6,493 Produce; bench/README.md,
 * "Coordinators remembered"). The Java client remembers the coordinator until a request says it
 * moved; this does the same for kafkajs (installed by kafkajs.ts).
 *
 * A remembered coordinator is forgotten when a request to it fails for a reason that says it is
 * not (or no longer) the coordinator, or the connection failed. A transactional request refused
 * with "not the coordinator" was not handled by that broker, so it is sent once more to the
 * coordinator found afresh: what kafkajs alone would have done (find, then send) had it asked.
 */

/** kafkajs's names for "this broker is not the coordinator (any more)": the request was not handled. */
const MOVED = new Set(['NOT_COORDINATOR_FOR_GROUP', 'NOT_COORDINATOR', 'GROUP_COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_NOT_AVAILABLE']);

/** Connection failures: the remembered broker may be gone; whether the request was handled is unknown. */
const CONNECTION = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError']);

/** The coordinator's requests that a refusal with "not the coordinator" lets us send again as they were. */
export const RESENDABLE_WHEN_MOVED: ReadonlySet<string> = new Set(['addPartitionsToTxn', 'addOffsetsToTxn', 'endTxn', 'txnOffsetCommit']);

export type CoordinatorFailure = 'moved' | 'connection' | 'other';

/** What a failed request to a coordinator says about it (pure; errors are kafkajs's). */
export function coordinatorFailure(error: unknown): CoordinatorFailure {
  if (typeof error !== 'object' || error === null) return 'other';
  const { type, name, code } = error as { type?: unknown; name?: unknown; code?: unknown };
  if (typeof type === 'string' && MOVED.has(type)) return 'moved';
  if (typeof name === 'string' && CONNECTION.has(name)) return 'connection';
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE') return 'connection';
  return 'other';
}

/** Coordinator type 0 is a consumer group, 1 a transactional id (KIP-98's FindCoordinator). */
export function coordinatorKey(groupId: string, coordinatorType: number): string {
  return `${coordinatorType}:${groupId}`;
}

/**
 * One cluster's remembered coordinators: key → broker node id. Bounded by the ids one client
 * uses (its consumer group, its transactional id, the groups its admin reads), so it never grows
 * past a handful; `forget` drops an entry only if it still names the node that failed, so a
 * late failure from an old coordinator does not undo a newer lookup.
 */
export class CoordinatorMemory {
  readonly #nodes = new Map<string, number>();

  recall(key: string): number | undefined {
    return this.#nodes.get(key);
  }

  remember(key: string, nodeId: number): void {
    this.#nodes.set(key, nodeId);
  }

  forget(key: string, nodeId: number): void {
    if (this.#nodes.get(key) === nodeId) this.#nodes.delete(key);
  }

  get size(): number {
    return this.#nodes.size;
  }
}
