/**
 * Which fetched records belong to aborted transactions, for `read_committed` consumers.
 *
 * kafkajs 2.2.4 (src/consumer/filterAbortedMessages.js) gets this wrong when a fetch covers more
 * than one aborted transaction: it assumes the broker lists them by first offset (the broker lists
 * them in abort order) and activates at most one per record, so records of an aborted transaction
 * can reach a `read_committed` consumer. That happens exactly when several transactional
 * producers are fenced at once, e.g. after a worker is killed. This is the Java consumer's rule:
 * every aborted transaction whose first offset has been reached is active until its producer's
 * ABORT marker.
 */

/** The shape kafkajs decodes from a Fetch response. */
export interface AbortedTransaction {
  readonly producerId: string | number | bigint | { toString(): string };
  readonly firstOffset: string | number | bigint | { toString(): string };
}

export interface FetchedRecord {
  readonly offset: string;
  readonly key?: Buffer | null;
  readonly isControlRecord?: boolean;
  readonly batchContext: { readonly producerId: { toString(): string } | string; readonly inTransaction: boolean };
}

/** A control record's key: version (int16) then type (int16); type 0 is ABORT. */
function isAbortMarker(record: FetchedRecord): boolean {
  const key = record.key;
  return record.isControlRecord === true && key != null && key.length >= 4 && key.readInt16BE(2) === 0;
}

export function filterAbortedRecords<T extends FetchedRecord>(records: readonly T[], abortedTransactions: readonly AbortedTransaction[] | undefined): T[] {
  if (abortedTransactions === undefined || abortedTransactions.length === 0) return [...records];
  const pending = abortedTransactions
    .map((t) => ({ producerId: String(t.producerId), firstOffset: BigInt(String(t.firstOffset)) }))
    .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  const active = new Set<string>();
  return records.filter((record) => {
    const offset = BigInt(record.offset);
    while (pending.length > 0 && (pending[0]?.firstOffset ?? 0n) <= offset) active.add(pending.shift()?.producerId ?? '');
    const producerId = String(record.batchContext.producerId);
    if (isAbortMarker(record)) {
      active.delete(producerId);
      return true; // control records are dropped by kafkajs afterwards
    }
    return !(record.batchContext.inTransaction && active.has(producerId));
  });
}

/**
 * The records of aborted transactions (the ones `filterAbortedRecords` drops, control records
 * aside), each with the aborted transaction it was written in, named by its producer id and first
 * offset: records of one name ended at one ABORT marker. Several transactions of a producer whose
 * markers were lost share one name with the transaction whose abort ended them all
 * (ledger-store.ts reads what that means for a ledger's marks).
 */
export function abortedRecords<T extends FetchedRecord>(
  records: readonly T[],
  abortedTransactions: readonly AbortedTransaction[] | undefined,
): { readonly record: T; readonly transaction: string }[] {
  if (abortedTransactions === undefined || abortedTransactions.length === 0) return [];
  const pending = abortedTransactions
    .map((t) => ({ producerId: String(t.producerId), firstOffset: BigInt(String(t.firstOffset)) }))
    .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  const active = new Map<string, bigint>();
  const out: { record: T; transaction: string }[] = [];
  for (const record of records) {
    const offset = BigInt(record.offset);
    while (pending.length > 0 && (pending[0]?.firstOffset ?? 0n) <= offset) {
      const next = pending.shift();
      if (next !== undefined) active.set(next.producerId, next.firstOffset);
    }
    const producerId = String(record.batchContext.producerId);
    if (isAbortMarker(record)) active.delete(producerId);
    else if (record.isControlRecord !== true && record.batchContext.inTransaction) {
      const first = active.get(producerId);
      if (first !== undefined) out.push({ record, transaction: `${producerId}@${first}` });
    }
  }
  return out;
}
