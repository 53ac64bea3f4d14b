/**
 * Which broker coordinates a transactional id, remembered per kafkajs cluster.
 *
 * kafkajs 2.2.4 asks the cluster (a FindCoordinator round trip) before every transactional
 * request: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn each find the transaction coordinator
 * (and sendOffsets the group's too). A ledger mark's transaction was then 5 round trips instead of
 * 3, and FindCoordinator was the most frequent request the worker sent (17,809 in 32 s for 200
 * codes a second, against 6,493 Produce; bench/README.md, "Coordinators remembered"). The Java
 * client remembers the coordinator until a request says it moved; this does the same for the
 * transaction coordinator (installed by kafkajs.ts).
 *
 * A group's coordinator is remembered only by the transactional producers' clusters
 * (transactionalClusters in kafkajs.ts), for `sendOffsets`: one FindCoordinator round trip less in
 * every transaction that commits offsets, about a third of the worker's transactions (75 lookups a
 * second at 500 commands a second; bench/README.md). If that coordinator moved, the TxnOffsetCommit
 * fails: kafkajs 2.2.4 does not retry NOT_COORDINATOR_FOR_GROUP there (its list names types it
 * never uses), so the worker calls `sendOffsets` again itself (groupCoordinatorMoving), which looks
 * the coordinator up afresh, within the same transaction. Elsewhere a group's
 * coordinator is looked up as kafkajs does, every time: the admin's offset reads decide whether a
 * transaction that failed to answer committed after all (partition-transaction.ts), and a
 * remembered coordinator that moved would fail the first such read after the move, which reads as
 * "not committed".
 *
 * A remembered coordinator is forgotten when a request to it fails for a reason that says it is
 * not (or no longer) the coordinator, or the connection failed. The request itself fails as it
 * would have in kafkajs; a failed transaction is aborted and redone by its caller, whose abort
 * finds the coordinator afresh.
 */

/** kafkajs 2.2.4's names (protocol/error.js, codes 15 and 16) for "this broker is not the coordinator (any more)". */
const MOVED = new Set(['NOT_COORDINATOR_FOR_GROUP', 'GROUP_COORDINATOR_NOT_AVAILABLE']);

/** kafkajs 2.2.4's name (code 14) for a group coordinator still loading the group, as one is just after it moved. */
const LOADING = 'GROUP_LOAD_IN_PROGRESS';

/**
 * Whether a failed `sendOffsets` is worth calling again in the same transaction (pure; errors are
 * kafkajs's): the group's coordinator moved or is loading, as while a broker restarts. kafkajs
 * gives up on these at once: its TxnOffsetCommit retry lists `NOT_COORDINATOR`,
 * `COORDINATOR_NOT_AVAILABLE` and `COORDINATOR_LOAD_IN_PROGRESS`, names its own errors never carry
 * (src/producer/eosManager/index.js). Without this a broker restart failed the results
 * transaction of every partition whose group coordinator it hosted, and while the group
 * rebalanced (it does when its coordinator moves) their claims ended.
 */
export function groupCoordinatorMoving(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { type } = error as { type?: unknown };
  return typeof type === 'string' && (MOVED.has(type) || type === LOADING);
}

/** Connection failures: the remembered broker may be gone. */
const CONNECTION = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError']);

/** FindCoordinator's coordinator type for a transactional id (KIP-98); 0 is a consumer group. */
export const TRANSACTION_COORDINATOR = 1;
export const GROUP_COORDINATOR = 0;

/**
 * Whether a failed request to a remembered coordinator means it is to be forgotten (pure; errors
 * are kafkajs's): the broker says it is not the coordinator, or the connection to it failed.
 */
export function forgetsCoordinator(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { type, name, code } = error as { type?: unknown; name?: unknown; code?: unknown };
  if (typeof type === 'string' && MOVED.has(type)) return true;
  if (typeof name === 'string' && CONNECTION.has(name)) return true;
  return code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE';
}

/** Coordinator type 0 is a consumer group, 1 a transactional id (KIP-98's FindCoordinator). */
export function coordinatorKey(groupId: string, coordinatorType: number): string {
  return `${coordinatorType}:${groupId}`;
}

/**
 * One cluster's remembered coordinators: key → broker node id. Bounded by the transactional ids
 * and groups one cluster uses (kafkajs makes a cluster per producer: one of each). `forget` drops
 * an entry only if it still names the node that failed, so a late failure from an old coordinator
 * does not undo a newer lookup.
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
