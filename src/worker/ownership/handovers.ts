import { SmsWorkerError } from '../../errors.ts';
import type { PartitionReader } from '../../kafka/partition-reader.ts';
import type { KeyedRecord, KeyedRecordProducer } from '../../kafka/ports.ts';
import { QueueFullError, SendBatcher } from '../../kafka/send-batcher.ts';
import { retry } from '../../retry.ts';
import type { Logger } from '../../observability/logger.ts';
import { HandoverLookout } from './handover-lookout.ts';
import { decodeHandover, encodeHandover, type Handover, type HandoverSettlement } from './handover-record.ts';
import type { OpenMark } from '../lane/ledger-checkpoint.ts';

/** One command source's handovers (ledger on): written by a claim that stops working a partition, looked for by the next one. */
export interface Handovers {
  /** Writes the handover of one mark to ledger partition n, outside any transaction. Rejects if it could not be written. */
  write(partition: number, offset: bigint, mark: OpenMark, settlement: HandoverSettlement): Promise<void>;
  /** A lookout for the handovers of a new claim's in-doubt marks (`claimedAt`: when the claim began, epoch ms). */
  lookout(partition: number, marks: Iterable<OpenMark>, claimedAt: number): HandoverLookout;
}

export interface LedgerHandoversOptions {
  readonly ledgerTopic: string;
  /** handoverKey(group, topic). */
  readonly key: string;
  readonly producer: KeyedRecordProducer;
  /** Reads the ledger partition's tail (the handovers' one read). */
  readonly reader: Pick<PartitionReader, 'readAvailable'>;
  readonly admin: { fetchTopicOffsetsByTimestamp(topic: string, timestamp?: number): Promise<{ partition: number; offset: string }[]> };
  /** A handover larger than this (a result near the record limit, as JSON) is not written: the next owner reports UNKNOWN. */
  readonly maxRecordBytes: number;
  readonly graceMs: number;
  readonly pollMs: number;
  /**
   * Which of a claim's in-doubt marks of `partition` (their grace passed with no handover) already
   * have their result in the result topic, by offset (HandoverLookoutOptions.published). Without
   * it, every such mark is reported UNKNOWN.
   */
  readonly published?: (partition: number, marks: readonly OpenMark[]) => Promise<ReadonlySet<bigint>>;
  readonly log: Logger;
}

/**
 * How long one send of handovers may take before it counts as failed: the handovers' producer
 * (`KafkaKeyedProducer`) gives it up then and sends the next batch on a fresh producer.
 */
export const HANDOVER_SEND_TIMEOUT_MS = 5_000;

/**
 * Between the sends of a handover that failed (a broker away), tried again until the next owner
 * stops waiting for it (the grace): half jitter, so no loop spins.
 */
const HANDOVER_RETRY_BACKOFF = { initialMs: 250, maxMs: 2_000, jitter: 0.5 } as const;

/** Handovers per Kafka send, at most. */
const HANDOVERS_PER_SEND = 500;
/**
 * Handovers waiting for a send, at most (one per marked record: a process holds at most
 * MAX_RUN_AHEAD per partition); one beyond that is not written (the next owner reports UNKNOWN).
 */
const HANDOVERS_QUEUED = 20_000;

/**
 * This process's own handovers kept in memory, at most this many and this many bytes of their
 * encoded records (the oldest dropped first): a claim of the same partition by this process (its
 * lane failed while the broker was away, and the partition came back to it) takes its own
 * settlements from here at once, whether or not their records could be written.
 */
const OWN_HANDOVERS_KEPT = 20_000;
const OWN_HANDOVER_BYTES_KEPT = 16 * 1024 * 1024;

/** This process's own handovers by mark name (unique to the claim that made the mark): bounded as above. */
class OwnHandovers {
  readonly #byMark = new Map<
    string,
    { readonly partition: number; readonly offset: bigint; readonly settlement: HandoverSettlement; readonly bytes: number }
  >();
  #bytes = 0;

  remember(by: string, partition: number, offset: bigint, settlement: HandoverSettlement, bytes: number): void {
    this.#forget(by);
    this.#byMark.set(by, { partition, offset, settlement, bytes });
    this.#bytes += bytes;
    while (this.#byMark.size > OWN_HANDOVERS_KEPT || this.#bytes > OWN_HANDOVER_BYTES_KEPT) {
      const oldest = this.#byMark.keys().next();
      if (oldest.done === true) break;
      this.#forget(oldest.value);
    }
  }

  /** The settlement this process handed over for the mark named `by` of `partition` at `offset`, if it did. */
  settlementOf(by: string, partition: number, offset: bigint): HandoverSettlement | undefined {
    const own = this.#byMark.get(by);
    return own !== undefined && own.partition === partition && own.offset === offset ? own.settlement : undefined;
  }

  #forget(by: string): void {
    const own = this.#byMark.get(by);
    if (own === undefined) return;
    this.#byMark.delete(by);
    this.#bytes -= own.bytes;
  }
}

/**
 * Submits one handover record, trying a failed send again while the next owner may still be
 * waiting for it (it waits the grace from its claim and the mark's time; for a command withdrawn
 * as its claim retires, that claim comes after this): a broker restarting while a partition moves
 * would otherwise leave the next owner reporting commands UNKNOWN that it could have settled.
 */
async function submitWithinGrace(batcher: SendBatcher<KeyedRecord>, record: KeyedRecord, graceMs: number, log: Logger, offset: bigint): Promise<void> {
  const until = Date.now() + graceMs;
  await retry(() => batcher.submit([record]), {
    attempts: Number.POSITIVE_INFINITY,
    backoff: HANDOVER_RETRY_BACKOFF,
    // Not a full queue, nor a producer its owner closed (a shutdown), nor past the grace.
    retryable: (error) => !(error instanceof QueueFullError) && !(error instanceof SmsWorkerError && !error.retryable) && Date.now() < until,
    onRetry: (error, n, delayMs) =>
      log.debug({ err: error, partition: record.partition, offset: offset.toString(), retry: n, delayMs }, 'writing a handover failed; trying again'),
  });
}

/** Handovers in the source's ledger topic (handover-record.ts says why there). */
export function ledgerHandovers(o: LedgerHandoversOptions): Handovers {
  // Before its record is sent: a handover this process wrote is its own to take at a next claim of
  // the partition, even when the send fails (a broker away: the claim ends, and the partition
  // comes back to this process when the broker does). Without it the process waited out the grace
  // for its own handover and reported its own answered sends UNKNOWN
  // (test/worker/broker-crash.int.test.ts).
  const own = new OwnHandovers();
  // One send at a time, carrying every handover queued meanwhile: kafkajs's idempotent producer
  // drops records of concurrent sends to one partition without an error (tulios/kafkajs#1005:
  // they reuse sequence numbers, and the broker acknowledges them as duplicates). Seen here as a
  // handover that never arrived, in a scale run where one process handed 8 partitions over at once.
  const batcher = new SendBatcher<KeyedRecord>({
    // Bounded by the producer's send timeout: a send that hangs (a broker that stopped answering)
    // would hold back every later handover of the source; past the timeout its handovers count as
    // not written (`write` tries them again within the grace; the send may also land after all)
    // and the next batch goes, on a fresh producer.
    send: (records) => o.producer.send(o.ledgerTopic, records),
    maxRecords: HANDOVERS_PER_SEND,
    maxQueued: HANDOVERS_QUEUED,
  });
  return {
    write: async (partition, offset, mark, settlement) => {
      const value = encodeHandover(offset, mark, settlement);
      if (value === undefined || mark.by === undefined) return;
      own.remember(mark.by, partition, offset, settlement, value.length);
      if (value.length > o.maxRecordBytes)
        throw new SmsWorkerError(
          'HANDOVER_TOO_LARGE',
          `the handover of offset ${offset} is ${value.length} bytes, over the ${o.maxRecordBytes}-byte record limit`,
        );
      await submitWithinGrace(batcher, { key: o.key, value, partition }, o.graceMs, o.log, offset);
    },
    lookout: (partition, marks, claimedAt) =>
      new HandoverLookout({
        marks,
        claimedAt,
        own: (mark) => (mark.by === undefined ? undefined : own.settlementOf(mark.by, partition, mark.offset)),
        graceMs: o.graceMs,
        pollMs: o.pollMs,
        ...(o.published !== undefined && { published: (inDoubt) => o.published?.(partition, inDoubt) ?? Promise.resolve(new Set<bigint>()) }),
        log: o.log,
        source: {
          startAt: async (timestamp) => {
            const found = (await o.admin.fetchTopicOffsetsByTimestamp(o.ledgerTopic, timestamp)).find((p) => p.partition === partition);
            return BigInt(found?.offset ?? '0');
          },
          readFrom: async (from) => {
            const { records, next } = await o.reader.readAvailable(o.ledgerTopic, partition, from);
            const handovers: Handover[] = [];
            for (const record of records) {
              const handover = decodeHandover(record.key, record.value, o.key);
              if (handover !== undefined) handovers.push(handover);
            }
            return { handovers, next };
          },
        },
      }),
  };
}
