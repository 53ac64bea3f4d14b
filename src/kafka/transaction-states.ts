/**
 * Whether a transaction left open in a partition can still get its markers: Kafka's
 * DescribeTransactions (key 65) asked of the transactional id's coordinator, and DescribeProducers
 * (key 61) asked of the partition's leader, both v0 (Kafka ≥ 3.0), which kafkajs 2.2.4 does not
 * have. A claim reads its ledger partition to the end right after its fence, and a transaction open
 * there holds that read. Most end by themselves a moment later (their coordinator writes the
 * markers once it has loaded its log after a restart); some never do (Kafka 4.3.1 loses a
 * partition's marker in a graceful restart of its only replica, docs/operations.md), and the claim
 * used to wait DECIDED_WAIT_MS (10 s) for every one before it ended it. With these answers it ends
 * at once a transaction its coordinator is done with — the kafka-transactions tool's test for a
 * hanging transaction — and waits only for one whose markers are still due.
 *
 * The encoding is written here, not with kafkajs's internal encoder: both requests are "flexible"
 * (compact strings and arrays, tagged fields), and a request's header tagged fields go at the
 * start of its body, since kafkajs writes the v1 header (as it does for its own
 * ListPartitionReassignments).
 */

import { SmsWorkerError } from '../errors.ts';

/** A transaction open in a partition: its producer and the offset it started at (DescribeProducers). */
export interface OpenTransaction {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly startOffset: bigint;
}

/** What a transactional id's coordinator holds for it (DescribeTransactions). */
export interface CoordinatorTransaction {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** Kafka's state name: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence, Dead. */
  readonly state: string;
}

/**
 * `abandoned`: no marker will ever come for the transactions open in the partition; `due`: their
 * coordinator may still write one; `unknown`: the answers cannot tell (another producer id, a
 * broker without these requests, an error). Only `abandoned` cuts the wait short.
 */
export type MarkerOutlook = 'abandoned' | 'due' | 'unknown';

/** States in which the coordinator has written, or given up, every marker of the id's transactions. */
const DONE_STATES: ReadonlySet<string> = new Set(['Empty', 'CompleteCommit', 'CompleteAbort']);

/**
 * Whether the transactions open in a partition can still get a marker (pure). The coordinator is
 * asked first, the partition after (PartitionReader.markerOutlook): a coordinator in a done state
 * has had every marker of the id's transactions acknowledged by the partitions' in-sync replicas,
 * so a transaction of that producer still open in the partition's leader afterwards lost its
 * marker, or was never known to the coordinator. Open transactions of any other producer id (an id
 * expired and made again, another deployment writing the topic) are not this coordinator's to
 * judge: unknown. Kafka answers DescribeProducers from a follower too, and a follower still
 * catching up (a broker back from a restart, its leadership moved) reports open a transaction
 * whose marker the leader has: so `leaderStable`, the last stable offset the leader gave (a
 * leader-only ListOffsets) just before and just after DescribeProducers, must each still be the
 * earliest open transaction's start, or the answer is unknown.
 */
export function markerOutlook(open: readonly OpenTransaction[], coordinator: CoordinatorTransaction, leaderStable: readonly bigint[]): MarkerOutlook {
  // Nothing open any more: the markers were written (the stable offset waits for them to be replicated).
  if (open.length === 0) return 'due';
  const ofThisProducer = open.every((t) => t.producerId === coordinator.producerId && t.producerEpoch <= coordinator.producerEpoch);
  if (!ofThisProducer) return 'unknown';
  if (!DONE_STATES.has(coordinator.state)) return 'due';
  const start = open.reduce((earliest, t) => (t.startOffset < earliest ? t.startOffset : earliest), open[0]?.startOffset ?? -1n);
  const fromTheLeader = leaderStable.length > 0 && leaderStable.every((stable) => stable === start);
  return fromTheLeader ? 'abandoned' : 'unknown';
}

// ---- the wire format (Kafka protocol, flexible versions) ----

/** A request as kafkajs's connection sends it: its body is written after kafkajs's v1 header. */
export interface RawRequest {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly apiName: string;
  /** kafkajs asks for an Encoder; it only reads `buf` (to check) and `buffer`. */
  readonly encode: () => Promise<{ readonly buf: Buffer; readonly buffer: Buffer }>;
}

const DESCRIBE_PRODUCERS_KEY = 61;
const DESCRIBE_TRANSACTIONS_KEY = 65;

class Writer {
  readonly #parts: Buffer[] = [];
  uvarint(value: number): this {
    const bytes: number[] = [];
    let v = value >>> 0;
    while (v >= 0x80) {
      bytes.push((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    bytes.push(v);
    this.#parts.push(Buffer.from(bytes));
    return this;
  }
  int32(value: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(value);
    this.#parts.push(b);
    return this;
  }
  compactString(value: string): this {
    const bytes = Buffer.from(value, 'utf8');
    this.uvarint(bytes.length + 1);
    this.#parts.push(bytes);
    return this;
  }
  /** No tagged fields. */
  tags(): this {
    return this.uvarint(0);
  }
  bytes(): Buffer {
    return Buffer.concat(this.#parts);
  }
}

function rawRequest(apiKey: number, apiName: string, body: Buffer): RawRequest {
  return { apiKey, apiVersion: 0, apiName, encode: () => Promise.resolve({ buf: body, buffer: body }) };
}

/** DescribeProducers v0 for one partition. */
export function describeProducersRequest(topic: string, partition: number): RawRequest {
  // header tags, [topics: name, [partition indexes], tags], tags
  const body = new Writer().tags().uvarint(2).compactString(topic).uvarint(2).int32(partition).tags().tags().bytes();
  return rawRequest(DESCRIBE_PRODUCERS_KEY, 'DescribeProducers', body);
}

/** DescribeTransactions v0 for one transactional id. */
export function describeTransactionsRequest(transactionalId: string): RawRequest {
  const body = new Writer().tags().uvarint(2).compactString(transactionalId).tags().bytes();
  return rawRequest(DESCRIBE_TRANSACTIONS_KEY, 'DescribeTransactions', body);
}

/** A bounds-checked reader of a flexible response: a truncated or malformed answer throws, never reads past the end. */
class Reader {
  readonly buffer: Buffer;
  #offset = 0;
  constructor(buffer: Buffer) {
    this.buffer = buffer;
  }
  #need(n: number): void {
    if (this.#offset + n > this.buffer.length)
      throw new SmsWorkerError('KAFKA_ANSWER_MALFORMED', `the answer ends ${this.#offset + n - this.buffer.length} bytes early`);
  }
  uvarint(): number {
    let value = 0;
    for (let shift = 0; shift <= 28; shift += 7) {
      this.#need(1);
      const byte = this.buffer[this.#offset++] ?? 0;
      value |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value >>> 0;
    }
    throw new SmsWorkerError('KAFKA_ANSWER_MALFORMED', 'a varint longer than 5 bytes');
  }
  int16(): number {
    this.#need(2);
    const v = this.buffer.readInt16BE(this.#offset);
    this.#offset += 2;
    return v;
  }
  int32(): number {
    this.#need(4);
    const v = this.buffer.readInt32BE(this.#offset);
    this.#offset += 4;
    return v;
  }
  int64(): bigint {
    this.#need(8);
    const v = this.buffer.readBigInt64BE(this.#offset);
    this.#offset += 8;
    return v;
  }
  /** A compact nullable string. */
  string(): string | null {
    const length = this.uvarint();
    if (length === 0) return null;
    this.#need(length - 1);
    const v = this.buffer.toString('utf8', this.#offset, this.#offset + length - 1);
    this.#offset += length - 1;
    return v;
  }
  /** A compact array (null read as empty), each element read by `item`. */
  array<T>(item: () => T): T[] {
    const length = this.uvarint();
    const out: T[] = [];
    // Each element takes at least a byte: a length past the answer is malformed, not a huge loop.
    this.#need(Math.max(0, length - 1));
    for (let i = 0; i < length - 1; i++) out.push(item());
    return out;
  }
  skipTags(): void {
    const count = this.uvarint();
    for (let i = 0; i < count; i++) {
      this.uvarint();
      const size = this.uvarint();
      this.#need(size);
      this.#offset += size;
    }
  }
}

/** A partition's or transactional id's error in an answer: the request was understood, the broker could not tell. */
function answeredError(request: string, errorCode: number): SmsWorkerError {
  return new SmsWorkerError('KAFKA_DESCRIBE_FAILED', `${request} answered error code ${errorCode}`, { retryable: true });
}

/** The transactions open in `topic`[`partition`], from a DescribeProducers v0 answer (the payload after the correlation id). */
export function decodeDescribeProducers(payload: Buffer, topic: string, partition: number): OpenTransaction[] {
  const r = new Reader(payload);
  r.skipTags(); // the response header's
  r.int32(); // throttle time
  let found: OpenTransaction[] | undefined;
  let errorCode = 0;
  r.array(() => {
    const name = r.string();
    r.array(() => {
      const index = r.int32();
      const code = r.int16();
      r.string(); // error message
      const producers = r.array(() => {
        const producerId = r.int64();
        const producerEpoch = r.int32();
        r.int32(); // last sequence
        r.int64(); // last timestamp
        r.int32(); // coordinator epoch
        const startOffset = r.int64();
        r.skipTags();
        return { producerId, producerEpoch, startOffset };
      });
      r.skipTags();
      if (name === topic && index === partition) {
        errorCode = code;
        found = producers.filter((p) => p.startOffset >= 0n);
      }
    });
    r.skipTags();
  });
  if (errorCode !== 0) throw answeredError('DescribeProducers', errorCode);
  if (found === undefined) throw new SmsWorkerError('KAFKA_ANSWER_MALFORMED', `DescribeProducers answered without ${topic}[${partition}]`);
  return found;
}

/** What the coordinator holds for `transactionalId`, from a DescribeTransactions v0 answer (the payload after the correlation id). */
export function decodeDescribeTransactions(payload: Buffer, transactionalId: string): CoordinatorTransaction {
  const r = new Reader(payload);
  r.skipTags();
  r.int32(); // throttle time
  let found: CoordinatorTransaction | undefined;
  let errorCode = 0;
  r.array(() => {
    const code = r.int16();
    const id = r.string();
    const state = r.string() ?? '';
    r.int32(); // transaction timeout
    r.int64(); // transaction start time
    const producerId = r.int64();
    const producerEpoch = r.int16();
    r.array(() => {
      r.string();
      r.array(() => r.int32());
      r.skipTags();
    });
    r.skipTags();
    if (id === transactionalId) {
      errorCode = code;
      found = { producerId, producerEpoch, state };
    }
  });
  if (errorCode !== 0) throw answeredError('DescribeTransactions', errorCode);
  if (found === undefined) throw new SmsWorkerError('KAFKA_ANSWER_MALFORMED', 'DescribeTransactions answered without the transactional id asked for');
  return found;
}
