import { BatchTooLargeError, FencedError, type OutgoingRecord, type PartitionProducers, type WrittenBatch } from '../../kafka/ports.ts';
import type { PartitionReader } from '../../kafka/partition-reader.ts';
import { SmsWorkerError } from '../../errors.ts';
import { retry } from '../../retry.ts';
import type { Logger } from '../../observability/logger.ts';
import { checkpointKey, type Checkpoint } from './ledger-checkpoint.ts';
import { mayRepublishLost, readBackVerdict, readsBack, type ReadBack } from '../protocol/transaction-plan.ts';
import type { ClaimStanding } from '../protocol/ownership.ts';
import type { RecordOutcome } from '../send/record-handler.ts';
import { publishesRecord } from './record-outcomes.ts';

function rounds<T extends { topic: string }>(sends: readonly T[]): T[][] {
  const out: T[][] = [];
  const seen = new Map<string, number>();
  for (const send of sends) {
    const i = seen.get(send.topic) ?? 0;
    seen.set(send.topic, i + 1);
    (out[i] ??= []).push(send);
  }
  return out;
}

/** Waits between attempts of a failed transaction: half jitter, 200 ms doubling to 5 s. */
const COMMIT_BACKOFF = { initialMs: 200, maxMs: 5_000, jitter: 0.5 } as const;

/** Per-record overhead in a record batch, beyond key and value (varints, headers count, attributes): generous. */
const RECORD_OVERHEAD = 64;

export interface CommitTarget {
  readonly topic: string;
  readonly partition: number;
  readonly consumerGroup: string;
  readonly resultTopic: string;
  readonly deadLetterTopic: string;
  /** The intent ledger topic (undefined: ledger off). */
  readonly ledgerTopic: string | undefined;
  /**
   * Largest record batch one send may carry: below the broker's / topics' max.message.bytes
   * (read at start-up). The Kafka client has no linger, so each send is one batch per partition.
   */
  readonly maxBatchBytes: number;
  /** The group generation of the claim committing (producers of other generations are refused). */
  readonly generation?: number;
  /**
   * What ownership says of the claim committing (asked at each attempt): `maySend`, its lease holds
   * and it is current; `mayReinitialise`, its producer may be initialised again after a failed
   * attempt (see mayCommit, mayInitialiseAgain).
   */
  readonly standing: ClaimStanding;
  /**
   * The ledger partition's newest checkpoint, read to its end (ledger on): whether a failed
   * transaction that published results without moving the offset committed after all.
   */
  readonly latestCheckpoint?: () => Promise<Checkpoint | undefined>;
  /** What became of a record batch a transaction wrote (PartitionReader.fateOfWritten): what a lost transaction publishes again (withLostRepublished). */
  readonly fateOfWritten?: PartitionReader['fateOfWritten'];
}

/**
 * Splits records into sends whose record batches stay below `maxBytes`. A record that alone
 * exceeds it was reduced before it got here (record-handler); it still goes alone.
 */
export function chunkBySize<T extends { key: string | Buffer | null; value: Buffer | null; headers?: Readonly<Record<string, string>> }>(
  items: readonly T[],
  maxBytes: number,
): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = RECORD_OVERHEAD + (item.key === null ? 0 : Buffer.byteLength(item.key)) + (item.value?.length ?? 0) + headerBytes(item.headers);
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

function headerBytes(headers: Readonly<Record<string, string>> | undefined): number {
  if (headers === undefined) return 0;
  let bytes = 0;
  for (const [key, value] of Object.entries(headers)) bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  return bytes;
}

/**
 * Publishes a finished prefix of a partition's records — results, dead letters — the ledger
 * checkpoint (when the ledger is on) and the next offset to consume, in one Kafka transaction: a
 * `read_committed` reader sees the results exactly when the offsets move, and never one without
 * the other. A transaction of marks alone carries the checkpoint and no offset. A failed
 * transaction is aborted and retried with a fresh producer (same transactional id, so still fenced
 * against zombies); a fenced producer is never retried — the partition belongs to someone else.
 */
export async function commitTransaction(
  producers: PartitionProducers,
  target: CommitTarget,
  write: TransactionWrite,
  log: Logger,
  /** The group's committed offset of this partition, as the broker has it now. */
  committedOffset: () => Promise<bigint>,
  attempts = 6,
): Promise<{
  results: number;
  deadLetters: number;
  /** Where its sends put each topic-partition's records (undefined: it was read back as committed). */
  written: readonly WrittenBatch[] | undefined;
  /** The outcomes it carried: its own, after those of a lost transaction published again. */
  sent: readonly RecordOutcome[];
}> {
  const { outcomes, commitOffset, ledgerRecord, readBack } = write;
  let sends = new TransactionSends(outcomes, ledgerRecord, target);
  // What the transaction carries: its own outcomes, and those of a lost one published again.
  let sent = outcomes;
  const counts = { results: sends.results.length, deadLetters: sends.deadLetters.length };
  const attempt: AttemptState = { transactionFailed: false, dropped: false };
  // Published again with the failed transaction: what of earlier committed ones Kafka aborted.
  let republished: RecordOutcome[] = [];
  return retry(
    async (n) => {
      attempt.transactionFailed = false;
      // A commit can fail on the client and still succeed on the broker (a lost EndTxn answer).
      // Re-initialising the producer completes or aborts that transaction; what it wrote
      // atomically with the results then says which (resending would duplicate them): the
      // ledger's checkpoint (ledger on), else the committed offset, as the machine's plan says
      // (`readBack`, protocol/transaction-plan.ts: readBackFor). A transaction without records to
      // publish or an offset to move (marks, withdrawals, repeats) is written again: its
      // checkpoint twice is harmless, once the ledger is not below the claim's own (its floor).
      const back = n > 1 ? await committedBefore(producers, target, readBack, committedOffset, attempt, sent) : undefined;
      if (back?.verdict === 'committed') {
        log.warn(
          { topic: target.topic, partition: target.partition, commitOffset, by: back.by ?? 'ledger' },
          back.by === 'results'
            ? 'the failed transaction had committed (its results are there, its ledger marker was lost); not resending'
            : 'the failed transaction had committed; not resending',
        );
        return { ...counts, written: attempt.written, sent };
      }
      if (back !== undefined) {
        const again = (await abortedBefore(back, write, sends, target, log, attempt)).filter((o, i, all) => !republished.includes(o) && all.indexOf(o) === i);
        if (back.verdict === 'lost' || again.length > 0) {
          republished = [...republished, ...again];
          sent = [...republished, ...outcomes];
          sends = new TransactionSends(sent, ledgerRecord, target, sends.maxBatchBytes);
        }
      }
      return { ...counts, written: await sendOnce(producers, target, sends, commitOffset, log, attempt), sent };
    },
    {
      attempts,
      backoff: COMMIT_BACKOFF,
      retryable: () => attempt.transactionFailed,
      onRetry: (error, n) =>
        log.warn(
          { err: error, topic: target.topic, partition: target.partition, attempt: n, maxBatchBytes: sends.maxBatchBytes },
          'transaction failed; checking whether it committed before retrying',
        ),
    },
  );
}

/**
 * After a read-back that found the failed transaction not committed (`resend`, or `lost` with one
 * the claim committed): what earlier committed transactions' records Kafka aborted, to publish again
 * with it (withLostRepublished, abortedWithFailed). When that cannot be read (the broker
 * away) the attempt counts as failed: resending now could lose it, the next attempt asks again.
 */
async function abortedBefore(
  back: ReadBackAnswer,
  write: TransactionWrite,
  failed: TransactionSends,
  target: CommitTarget,
  log: Logger,
  attempt: AttemptState,
): Promise<RecordOutcome[]> {
  try {
    const lost = back.verdict === 'lost' ? await withLostRepublished(write, back.latest, target, log) : [];
    return [...lost, ...(await abortedWithFailed(write, failed, lost, target, log))];
  } catch (error) {
    attempt.transactionFailed = !(error instanceof TransactionLostError);
    throw error;
  }
}

/**
 * After a read-back found the claim's last committed transaction lost (readBackVerdict: `lost`):
 * what to send with the failed transaction: that one's results and dead letters that Kafka aborted
 * (its markers lost in these partitions too, the re-initialisation's ABORT ended them) published
 * again, so the offset and the checkpoint do not move past commands whose results are gone. Its
 * records a reader sees (markers written) or that still hang (a later marker of this producer there
 * gives them the coordinator's COMMIT) are not sent again. Only if nothing older was lost
 * (mayRepublishLost); else the claim ends (TransactionLostError) and the next one reads the marks
 * Kafka kept, in doubt.
 */
async function withLostRepublished(write: TransactionWrite, latest: Checkpoint | undefined, target: CommitTarget, log: Logger): Promise<RecordOutcome[]> {
  const { previous } = write;
  if (previous === undefined || !mayRepublishLost(previous.floor, latest)) throw new TransactionLostError(target);
  const again = await abortedOf(previous, target);
  log.warn(
    { topic: target.topic, partition: target.partition, republished: again.length },
    'Kafka lost the markers of the transaction this claim committed last (a broker restart): publishing again what of it was aborted',
  );
  return again;
}

/**
 * After a failed transaction that published records, which Kafka aborted (the verdict `resend` or
 * `lost`): what of the claim's last committed transaction that published records
 * (`lastPublished`) that abort took with it, published again. Its commit was acknowledged, but its
 * markers to a result or dead-letter partition may have been lost in a broker restart (Kafka
 * 4.3.1, docs/operations.md): its records there then stay open until the producer's next marker
 * there, and the failed transaction's ABORT ended them too, while a marks-only transaction in
 * between committed its ledger records (so the ledger shows no loss). Only records proven aborted
 * are published again (nothing proves a loss here, and the usual answer is "seen by readers"):
 * one whose fate is not told stays as it is, and is logged.
 */
async function abortedWithFailed(
  write: TransactionWrite,
  failed: TransactionSends,
  lost: readonly RecordOutcome[],
  target: CommitTarget,
  log: Logger,
): Promise<RecordOutcome[]> {
  const { lastPublished, previous } = write;
  if (lastPublished === undefined || target.fateOfWritten === undefined || failed.results.length + failed.deadLetters.length === 0) return [];
  // The lost transaction's own republish already asked about it.
  if (lastPublished === previous && lost.length > 0) return [];
  const fates = await fatesOf(lastPublished, target);
  const aborted = fates?.aborted ?? [];
  const untold = fates?.untold.length ?? lastPublished.outcomes.filter(publishesRecord).length;
  if (aborted.length > 0 || untold > 0)
    log.warn(
      { topic: target.topic, partition: target.partition, republished: aborted.length, untold },
      aborted.length > 0
        ? 'the abort of the failed transaction also ended records of the last one this claim committed (their markers lost in a broker restart): publishing them again'
        : 'could not tell whether the abort of the failed transaction ended records of the last one this claim committed: not publishing them again',
    );
  return aborted;
}

/**
 * The outcomes of `previous` whose records Kafka aborted, batch by batch where its sends put them
 * (PartitionReader.fateOfWritten): aborted, published again; seen by readers, or hanging (the
 * producer's next marker there gives them the coordinator's COMMIT), not. A batch whose fate is not
 * told yet (another transaction below it still open), or whose records cannot be found, is
 * published again whole, as is everything without a reader or the sends' offsets: twice rather
 * than lost.
 */
async function abortedOf(previous: CommittedWrite, target: CommitTarget): Promise<RecordOutcome[]> {
  const fates = await fatesOf(previous, target);
  if (fates === undefined) return previous.outcomes.filter(publishesRecord);
  return previous.outcomes.filter((o) => fates.aborted.includes(o) || fates.untold.includes(o));
}

/**
 * What fateOfWritten tells of the records `previous` published, batch by batch where its sends put
 * them, each list in the order published: those aborted, and those of a batch whose fate is not
 * told (another transaction below it still open) or whose records cannot be found (its candidates
 * then). A batch still open as the producer's own is in neither. Undefined when nothing can be
 * asked: no reader, or not the sends' offsets.
 */
async function fatesOf(previous: CommittedWrite, target: CommitTarget): Promise<{ aborted: RecordOutcome[]; untold: RecordOutcome[] } | undefined> {
  const published = previous.outcomes.filter(publishesRecord);
  const { fateOfWritten } = target;
  if (fateOfWritten === undefined || previous.written === undefined || previous.written.some((w) => w.baseOffset < 0n)) return undefined;
  const named = (topic: string, value: Buffer): string => `${topic}\u0000${value.toString('base64')}`;
  const aborted = new Set<string>();
  const untold = new Set<string>();
  for (const batch of previous.written) {
    const candidates = valuesFor(batch.topic, published, target);
    if (candidates.length === 0) continue;
    const { ours, fate } = await fateOfWritten(batch.topic, batch.partition, batch.baseOffset, candidates);
    if (fate === 'open') continue;
    for (const value of fate ?? (ours.length > 0 ? ours : candidates)) (fate === undefined ? untold : aborted).add(named(batch.topic, value));
  }
  const among = (names: Set<string>): RecordOutcome[] => published.filter((o) => o.value !== null && names.has(named(topicOf(o, target), o.value)));
  return { aborted: among(aborted), untold: among(untold) };
}

/** The topic an outcome that publishes a record writes to. */
function topicOf(outcome: RecordOutcome, target: CommitTarget): string {
  return outcome.kind === 'result' ? target.resultTopic : target.deadLetterTopic;
}

/** The values of `published` written to `topic`: what fateOfWritten looks for in a batch there. */
function valuesFor(topic: string, published: readonly RecordOutcome[], target: CommitTarget): Buffer[] {
  return published.filter((o) => topicOf(o, target) === topic).flatMap((o) => (o.kind === 'result' || o.kind === 'dead-letter' ? [o.value] : []));
}

/** The claim's last committed transaction (ledger on), kept until the next one commits: what a lost one publishes again. */
export interface CommittedWrite {
  readonly outcomes: readonly RecordOutcome[];
  /** Its read-back's floor: the checkpoint the claim had committed (or read) before it. */
  readonly floor: Checkpoint | undefined;
  /** Where its sends put the records of each topic-partition (undefined: not known, its commit was read back). */
  readonly written: readonly WrittenBatch[] | undefined;
}

/** What one transaction writes, as the partition machine planned it (protocol/effects.ts, TransactionPlan). */
export interface TransactionWrite {
  /** The claim's last committed transaction, published again should the read-back find it lost. */
  readonly previous?: CommittedWrite;
  /**
   * The claim's last committed transaction that published records (results, dead letters): what
   * the abort of a failed one may have taken with it (abortedWithFailed).
   */
  readonly lastPublished?: CommittedWrite;
  readonly outcomes: readonly RecordOutcome[];
  /** The next offset to consume, or undefined when the transaction only writes the ledger. */
  readonly commitOffset: string | undefined;
  /** The ledger checkpoint to write in the same transaction, encoded. */
  readonly ledgerRecord: Buffer | undefined;
  /** What tells, should it fail on the client, whether it committed after all. */
  readonly readBack: ReadBack;
}

/** What one commit's attempts share. */
interface AttemptState {
  /** Set when the transaction itself failed: only that is retried, never a stale claim, a fenced producer or a producer that could not be had. */
  transactionFailed: boolean;
  /** Set once an attempt dropped the partition's producer: the next one is initialised again. */
  dropped: boolean;
  /** Where the last attempt's sends put its records (their answers), once all were sent: what its read-back may ask the fate of. */
  written?: WrittenBatch[] | undefined;
}

/**
 * A transaction's sends: results and dead letters chunked below the size limit, and the ledger
 * checkpoint. A send the broker still refuses as too large is split finer on the next try (a limit
 * lower than the one read at start-up), never redelivered.
 */
class TransactionSends {
  readonly results: OutgoingRecord[] = [];
  readonly deadLetters: OutgoingRecord[] = [];
  readonly ledgerRecord: Buffer | undefined;
  readonly #target: CommitTarget;
  maxBatchBytes: number;
  messages: { topic: string; messages: OutgoingRecord[] }[];

  constructor(outcomes: readonly RecordOutcome[], ledgerRecord: Buffer | undefined, target: CommitTarget, maxBatchBytes = target.maxBatchBytes) {
    for (const outcome of outcomes) {
      if (!publishesRecord(outcome)) continue;
      const record: OutgoingRecord = { key: outcome.key, value: outcome.value, ...(outcome.headers !== undefined && { headers: outcome.headers }) };
      (outcome.kind === 'result' ? this.results : this.deadLetters).push(record);
    }
    this.ledgerRecord = ledgerRecord;
    this.#target = target;
    this.maxBatchBytes = maxBatchBytes;
    this.messages = this.#plan();
  }

  /** Halves the chunk size (false when it cannot get smaller). */
  splitFiner(): boolean {
    if (this.maxBatchBytes <= 1) return false;
    this.maxBatchBytes = Math.floor(this.maxBatchBytes / 2);
    this.messages = this.#plan();
    return true;
  }

  #plan(): { topic: string; messages: OutgoingRecord[] }[] {
    const target = this.#target;
    const sends: { topic: string; messages: OutgoingRecord[] }[] = [];
    for (const chunk of chunkBySize(this.results, this.maxBatchBytes)) sends.push({ topic: target.resultTopic, messages: chunk });
    for (const chunk of chunkBySize(this.deadLetters, this.maxBatchBytes)) sends.push({ topic: target.deadLetterTopic, messages: chunk });
    if (this.ledgerRecord !== undefined && target.ledgerTopic !== undefined)
      sends.push({
        topic: target.ledgerTopic,
        messages: [{ key: checkpointKey(target.consumerGroup, target.topic), value: this.ledgerRecord, partition: target.partition }],
      });
    return sends;
  }
}

/**
 * After a failed attempt: whether that transaction committed after all (initialising the producer
 * again ends it either way). Throws when that cannot be told: resending could publish the results
 * twice, so the next attempt asks again; after the last one the claim fails, and the next claim
 * reads what the broker has.
 */
async function committedBefore(
  producers: PartitionProducers,
  target: CommitTarget,
  readBack: ReadBack,
  committedOffset: () => Promise<bigint>,
  attempt: AttemptState,
  sent: readonly RecordOutcome[],
): Promise<ReadBackAnswer> {
  mayInitialiseAgain(producers, target);
  const reader = readerOf(target, readBack, committedOffset);
  if (reader === undefined) return { verdict: 'resend', latest: undefined };
  // Kept across a read-back that fails (it is asked again at the next attempt); sendOnce replaces it.
  const written = attempt.written;
  let answer: ReadBackAnswer;
  try {
    answer = await committedAfterAll(producers, target, reader);
  } catch (error) {
    attempt.transactionFailed = !(error instanceof FencedError);
    throw error;
  }
  // The ledger says not committed, yet readers see the attempt's results: Kafka committed it and
  // lost its marker to the ledger partition (docs/operations.md). Sent again, every result was
  // published twice (the shipped-lane simulation with lost markers).
  if (answer.verdict === 'resend' && written !== undefined && (await seenByReaders(written, sent, target)))
    return { ...answer, verdict: 'committed', by: 'results' };
  return answer;
}

/**
 * Whether readers see a batch of results or dead letters that `written` put (the attempt's sends'
 * answers; the producer was initialised again since, which ended its transaction): then it
 * committed. One that still hangs as the producer's own open transaction (`open`, its marker
 * lost) counts too, as in abortedOf: the producer's next marker there, this retry's commit, would
 * publish it beside its copy. Undecided (not found, no reader, no offsets) is no.
 */
async function seenByReaders(written: readonly WrittenBatch[], sent: readonly RecordOutcome[], target: CommitTarget): Promise<boolean> {
  const { fateOfWritten } = target;
  if (fateOfWritten === undefined) return false;
  const published = sent.filter(publishesRecord);
  for (const batch of written) {
    if (batch.baseOffset < 0n) continue;
    const candidates = valuesFor(batch.topic, published, target);
    if (candidates.length === 0) continue;
    const { ours, fate } = await fateOfWritten(batch.topic, batch.partition, batch.baseOffset, candidates);
    if (ours.length > 0 && (fate === 'open' || (Array.isArray(fate) && fate.length === 0))) return true;
  }
  return false;
}

/**
 * Transactions this claim committed were lost in the ledger partition (readBackVerdict: `lost`),
 * more than the last one (or the last one is not known here): not retried. The claim ends; the next
 * one reads the marks Kafka kept (in doubt) and the group's offset.
 */
export class TransactionLostError extends SmsWorkerError {
  constructor(target: Pick<CommitTarget, 'topic' | 'partition'>) {
    super(
      'TRANSACTION_LOST',
      `the ledger of ${target.topic}[${target.partition}] is behind a checkpoint this claim committed: Kafka lost that transaction's markers, and initialising the producer again aborted what it had left open; not sending the failed transaction again (the claim ends and the next one reads what Kafka kept)`,
      { retryable: false },
    );
  }
}

/** One transaction: the sends, the offset, the commit; a failed one is aborted and its producer dropped. */
async function sendOnce(
  producers: PartitionProducers,
  target: CommitTarget,
  sends: TransactionSends,
  commitOffset: string | undefined,
  log: Logger,
  attempt: AttemptState,
): Promise<WrittenBatch[]> {
  for (;;) {
    // Never (re)initialise a producer without owning the partition: that would fence the owner.
    if (attempt.dropped) mayInitialiseAgain(producers, target);
    else if (!mayCommit(producers, target)) throw staleClaim(target);
    const producer = await producers.forPartition(target.topic, target.partition, target.generation);
    let transaction;
    try {
      transaction = await producer.transaction();
      // One request per round: the i-th size chunk of every topic together (a request may carry
      // several record batches; one topic-partition's records in one request are one batch).
      const written: WrittenBatch[] = [];
      attempt.written = undefined;
      for (const round of rounds(sends.messages)) written.push(...(await transaction.send(round)));
      attempt.written = written;
      if (commitOffset !== undefined)
        await transaction.sendOffsets({
          consumerGroupId: target.consumerGroup,
          topics: [{ topic: target.topic, partitions: [{ partition: target.partition, offset: commitOffset }] }],
        });
      await transaction.commit();
      return written;
    } catch (error) {
      // An abort that fails leaves the transaction to the coordinator until the partition's
      // producer is initialised again: open (its coordinator moved too), or, after a commit
      // whose answer was lost, committed or not (kafkajs then refuses the abort: "Cannot
      // continue to use transaction once ended"). Said, since what happens next depends on it.
      await transaction
        ?.abort()
        .catch((abortError: unknown) =>
          log.warn(
            { err: abortError, topic: target.topic, partition: target.partition, failure: error instanceof Error ? error.message : String(error) },
            'aborting the failed transaction failed: the coordinator decides it when the partition’s producer is initialised again',
          ),
        );
      await producers.discard(target.topic, target.partition, target.generation);
      attempt.dropped = true;
      // The protocol's rule: a transaction refused because the producer was fenced is final. The
      // partition belongs to someone else, and initialising the producer again (to retry) would
      // fence the rightful owner back while this claim's state (marks, offset) is stale.
      if (error instanceof FencedError)
        throw new FencedError(
          `transactional producer for ${target.topic}[${target.partition}] was fenced: the partition is owned by another instance`,
          error.cause,
        );
      // Not an outage: split finer and go again at once (at most log2(limit) times, so bounded),
      // without spending an attempt. Nothing was committed: the broker refused the send.
      if (error instanceof BatchTooLargeError && sends.splitFiner()) continue;
      attempt.transactionFailed = true;
      throw error;
    }
  }
}

/** What a read-back told, and the ledger's newest checkpoint it read (ledger on). */
interface ReadBackAnswer {
  readonly verdict: ReturnType<typeof readBackVerdict>;
  readonly latest: Checkpoint | undefined;
  /** What told `committed`: the ledger (or the offset), or the attempt's results seen by readers (its ledger marker lost). */
  readonly by?: 'results';
}

/** Reads back what `readBack` names: undefined when nothing the failed transaction wrote would be duplicated and no floor is to be checked. */
function readerOf(target: CommitTarget, readBack: ReadBack, committedOffset: () => Promise<bigint>): (() => Promise<ReadBackAnswer>) | undefined {
  if (!readsBack(readBack)) return undefined;
  if (readBack.by === 'offset') return async () => ({ verdict: readBackVerdict(readBack, { committedOffset: await committedOffset() }), latest: undefined });
  const { latestCheckpoint } = target;
  if (latestCheckpoint === undefined)
    throw new Error(`cannot tell whether the failed transaction of ${target.topic}[${target.partition}] committed: no ledger reader`);
  return async () => {
    const latest = await latestCheckpoint();
    return { verdict: readBackVerdict(readBack, { checkpoint: latest }), latest };
  };
}

function staleClaim(target: CommitTarget): FencedError {
  return new FencedError(`not committing for ${target.topic}[${target.partition}]: this worker's claim is stale or its group lease expired`);
}

/**
 * Whether the claim may still commit: a current claim may (and may initialise its producer, which
 * fences earlier owners); a claim retiring after a rebalance only while its generation's producer
 * is still there (nobody fenced it), never initialising one (that would fence the new owner).
 */
function mayCommit(producers: PartitionProducers, target: CommitTarget): boolean {
  if (target.standing.maySend()) return true;
  return target.generation !== undefined && producers.has(target.topic, target.partition, target.generation);
}

/**
 * Throws unless the partition's producer may be initialised again after a failed attempt: the
 * claim may commit (`mayCommit`), and ownership says it may initialise its producer again
 * (`mayReinitialise`: its lease holds, it is current, and the group is not rebalancing): until the
 * new assignment is known the partition may be another member's,
 * whose fence an initialisation from here would take back (the simulation found it once it
 * modelled this retry). Not retried: a claim whose producer was dropped is not kept across the
 * rebalance anyway, so the claim fails and the next one reads what the broker has.
 */
function mayInitialiseAgain(producers: PartitionProducers, target: CommitTarget): void {
  if (!mayCommit(producers, target)) throw staleClaim(target);
  if (!target.standing.mayReinitialise())
    throw new SmsWorkerError(
      'CLAIM_REBALANCING',
      `not initialising the producer for ${target.topic}[${target.partition}] again: the group rebalances, or the claim's lease lapsed or it is no longer current; the claim ends`,
      {
        retryable: true,
      },
    );
}

/** Initialises the partition's producer again (which ends the failed transaction either way), then asks `readBack`; throws when that cannot be told. */
async function committedAfterAll<V>(producers: PartitionProducers, target: CommitTarget, readBack: () => Promise<V>): Promise<V> {
  try {
    await producers.forPartition(target.topic, target.partition, target.generation);
    return await readBack();
  } catch (error) {
    await producers.discard(target.topic, target.partition, target.generation);
    throw error;
  }
}
