import { SmsWorkerError } from '../errors.ts';
import type { PartitionReader } from '../kafka/partition-reader.ts';
import type { KeyedRecord, KeyedRecordProducer } from '../kafka/ports.ts';
import { SendBatcher } from '../kafka/send-batcher.ts';
import type { Logger } from '../observability/logger.ts';
import { HandoverLookout } from './handover-lookout.ts';
import { decodeHandover, encodeHandover, type Handover, type HandoverSettlement } from './handover-record.ts';
import type { OpenMark } from './ledger-checkpoint.ts';

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
  readonly reader: PartitionReader;
  readonly admin: { fetchTopicOffsetsByTimestamp(topic: string, timestamp?: number): Promise<{ partition: number; offset: string }[]> };
  /** A handover larger than this (a result near the record limit, as JSON) is not written: the next owner reports UNKNOWN. */
  readonly maxRecordBytes: number;
  readonly graceMs: number;
  readonly pollMs: number;
  readonly log: Logger;
}

/**
 * How long one send of handovers may take before it counts as failed: the handovers' producer
 * (`KafkaKeyedProducer`) gives it up then and sends the next batch on a fresh producer.
 */
export const HANDOVER_SEND_TIMEOUT_MS = 5_000;

/** Handovers per Kafka send, at most. */
const HANDOVERS_PER_SEND = 500;
/**
 * Handovers waiting for a send, at most (one per marked record: a process holds at most
 * MAX_RUN_AHEAD per partition); one beyond that is not written (the next owner reports UNKNOWN).
 */
const HANDOVERS_QUEUED = 20_000;

/** Handovers in the source's ledger topic (handover-record.ts says why there). */
export function ledgerHandovers(o: LedgerHandoversOptions): Handovers {
  // One send at a time, carrying every handover queued meanwhile: kafkajs's idempotent producer
  // drops records of concurrent sends to one partition without an error (tulios/kafkajs#1005:
  // they reuse sequence numbers, and the broker acknowledges them as duplicates). Seen here as a
  // handover that never arrived, in a scale run where one process handed 8 partitions over at once.
  const batcher = new SendBatcher<KeyedRecord>({
    // Bounded by the producer's send timeout: a send that hangs (a broker that stopped answering)
    // would hold back every later handover of the source; past the timeout its handovers count as
    // not written (the next owner reports those commands UNKNOWN, unless the send lands after all)
    // and the next batch goes, on a fresh producer.
    send: (records) => o.producer.send(o.ledgerTopic, records),
    maxRecords: HANDOVERS_PER_SEND,
    maxQueued: HANDOVERS_QUEUED,
  });
  return {
    write: async (partition, offset, mark, settlement) => {
      const value = encodeHandover(offset, mark, settlement);
      if (value === undefined) return;
      if (value.length > o.maxRecordBytes)
        throw new SmsWorkerError(
          'HANDOVER_TOO_LARGE',
          `the handover of offset ${offset} is ${value.length} bytes, over the ${o.maxRecordBytes}-byte record limit`,
        );
      await batcher.submit([{ key: o.key, value, partition }]);
    },
    lookout: (partition, marks, claimedAt) =>
      new HandoverLookout({
        marks,
        claimedAt,
        graceMs: o.graceMs,
        pollMs: o.pollMs,
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
