/**
 * Reads committed records of one partition between two offsets, without a consumer group.
 *
 * kafkajs has no `assign()`: every consumer joins a group, which costs a rebalance (seconds on a
 * broker with `group.initial.rebalance.delay.ms`) and cannot be pointed at one partition. Recovery
 * on assignment needs exactly that — "read ledger partition n to its end", "read the last N
 * command records of partition n" — so this module sends Fetch requests itself, through a cluster
 * kafkajs builds with the client's own connection settings (TLS, SASL, retries). Aborted
 * transactions are filtered with the same rule as the consumer (aborted-transactions.ts).
 */
import type { Kafka } from 'kafkajs';
import { SmsWorkerError } from '../errors.ts';
import { abortedRecords, filterAbortedRecords, type AbortedTransaction, type FetchedRecord } from './aborted-transactions.ts';
import { clusterFactory } from './kafkajs.ts';
import {
  decodeDescribeProducers,
  decodeDescribeTransactions,
  describeProducersRequest,
  describeTransactionsRequest,
  markerOutlook,
  type MarkerOutlook,
  type RawRequest,
} from './transaction-states.ts';

/** A committed data record (control records and aborted transactions removed). */
export interface ReadRecord {
  readonly offset: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

interface KafkaJsRecord extends FetchedRecord {
  readonly value?: Buffer | null;
}

interface FetchPartition {
  readonly partition: number;
  readonly errorCode: number;
  readonly highWatermark: string;
  readonly lastStableOffset: string;
  readonly abortedTransactions?: AbortedTransaction[];
  readonly messages: KafkaJsRecord[];
}

interface KafkaJsBroker {
  listOffsets(request: {
    replicaId: number;
    isolationLevel: number;
    topics: { topic: string; partitions: { partition: number; timestamp: string }[] }[];
  }): Promise<{ responses: { topic: string; partitions: { partition: number; offset: string }[] }[] }>;
  /** The broker's ApiVersions answer, by api key. */
  readonly versions: Readonly<Record<number, { readonly minVersion: number; readonly maxVersion: number } | undefined>> | null;
  readonly connectionPool: {
    send(request: {
      request: RawRequest;
      response: { decode: (payload: Buffer) => Promise<Buffer>; parse: (payload: Buffer) => Promise<Buffer> };
      logResponseError: boolean;
    }): Promise<Buffer>;
  };
  fetch(request: {
    replicaId?: number;
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: FetchPartition[] }[] }>;
}

interface KafkaJsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadata(): Promise<void>;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(options: { nodeId: string }): Promise<KafkaJsBroker>;
  findGroupCoordinator(options: { groupId: string; coordinatorType: number }): Promise<KafkaJsBroker>;
}

/**
 * The partition's last stable offset as its leader gives it: ListOffsets (latest, read_committed)
 * is answered by the leader only (any other broker answers NOT_LEADER_OR_FOLLOWER, thrown here).
 */
async function leaderStableOffset(broker: KafkaJsBroker, topic: string, partition: number): Promise<bigint> {
  const answer = await broker.listOffsets({ replicaId: -1, isolationLevel: READ_COMMITTED, topics: [{ topic, partitions: [{ partition, timestamp: '-1' }] }] });
  const offset = answer.responses.find((r) => r.topic === topic)?.partitions.find((p) => p.partition === partition)?.offset;
  if (offset === undefined)
    throw new SmsWorkerError('KAFKA_LIST_OFFSETS_EMPTY', `ListOffsets of ${topic}[${partition}] returned no partition`, { retryable: true });
  return BigInt(offset);
}

export interface OutlookOptions {
  /** A performance.now() time (the caller's fence): an ask begun before it is not taken for an answer. */
  readonly notBefore?: number;
  /** How long to wait for the answers before saying `unknown`. @defaultValue MARKER_OUTLOOK_TIMEOUT_MS */
  readonly timeoutMs?: number;
}

/** How long PartitionReader.markerOutlook waits for its answers before it says `unknown`. */
export const MARKER_OUTLOOK_TIMEOUT_MS = 2_000;

/** FindCoordinator's key type for a transactional id. */
const TRANSACTION_COORDINATOR = 1;

/** Sends a request kafkajs does not have and hands back its raw answer (after the correlation id); kafkajs logs no error line for it. */
async function sendRaw(broker: KafkaJsBroker, request: RawRequest): Promise<Buffer> {
  const supported = broker.versions?.[request.apiKey];
  if (supported === undefined || supported.minVersion > request.apiVersion || supported.maxVersion < request.apiVersion)
    throw new SmsWorkerError('KAFKA_REQUEST_UNSUPPORTED', `the broker does not answer ${request.apiName} v${request.apiVersion}`);
  const raw = (payload: Buffer): Promise<Buffer> => Promise.resolve(payload);
  return broker.connectionPool.send({ request, response: { decode: raw, parse: raw }, logResponseError: false });
}

const READ_COMMITTED = 1;
const READ_UNCOMMITTED = 0;

/** Creates a kafkajs cluster with the client's settings; kafkajs keeps the factory behind a symbol. */
function createCluster(kafka: Kafka): KafkaJsCluster {
  const create = clusterFactory(kafka)?.create;
  if (create === undefined)
    throw new SmsWorkerError('KAFKA_CLIENT_UNSUPPORTED', 'this kafkajs version has no cluster factory: the partition reader needs kafkajs 2.x');
  return create({ isolationLevel: READ_COMMITTED, allowAutoTopicCreation: false }) as KafkaJsCluster;
}

/** How long fateOfWritten waits for another producer's transaction below a batch to be decided. */
const UNDECIDED_WAIT_MS = 3_000;
/** How often it looks meanwhile. */
const UNDECIDED_POLL_MS = 100;

export class PartitionReader {
  readonly #cluster: KafkaJsCluster;
  /** markerOutlook's asks under way, by transactional id and partition, with when each began (performance.now). */
  readonly #outlooks = new Map<string, { readonly since: number; readonly answer: Promise<MarkerOutlook> }>();
  #closed = false;
  readonly #maxBytes: number;
  #connected: Promise<void> | undefined;

  constructor(kafka: Kafka, options: { maxBytes?: number } = {}) {
    this.#cluster = createCluster(kafka);
    this.#maxBytes = options.maxBytes ?? 1_048_576;
  }

  async #broker(topic: string, partition: number): Promise<KafkaJsBroker> {
    this.#connected ??= this.#cluster.connect().catch((error: unknown) => {
      this.#connected = undefined;
      throw error;
    });
    await this.#connected;
    await this.#cluster.addTargetTopic(topic);
    let leaders = this.#cluster.findLeaderForPartitions(topic, [partition]);
    if (Object.keys(leaders).length === 0) {
      await this.#cluster.refreshMetadata();
      leaders = this.#cluster.findLeaderForPartitions(topic, [partition]);
    }
    const nodeId = Object.keys(leaders)[0];
    if (nodeId === undefined) throw new SmsWorkerError('KAFKA_NO_LEADER', `no leader for ${topic}[${partition}]`, { retryable: true });
    return this.#cluster.findBroker({ nodeId });
  }

  async #fetch(topic: string, partition: number, offset: bigint, maxWaitTime: number, isolationLevel = READ_COMMITTED): Promise<FetchPartition> {
    const broker = await this.#broker(topic, partition);
    const response = await broker
      .fetch({
        replicaId: -1,
        isolationLevel,
        maxWaitTime,
        minBytes: 1,
        maxBytes: this.#maxBytes,
        topics: [{ topic, partitions: [{ partition, fetchOffset: offset.toString(), maxBytes: this.#maxBytes }] }],
      })
      .catch((error: unknown) => {
        // kafkajs throws a partition's error while it parses the answer, before errorCode is seen below.
        if (error instanceof Error && error.name === 'KafkaJSOffsetOutOfRange')
          throw new SmsWorkerError('KAFKA_OFFSET_OUT_OF_RANGE', `offset ${offset} is out of range for ${topic}[${partition}]`, { retryable: true });
        throw error;
      });
    const found = response.responses.find((r) => r.topicName === topic)?.partitions.find((p) => p.partition === partition);
    if (found === undefined) throw new SmsWorkerError('KAFKA_FETCH_EMPTY', `fetch of ${topic}[${partition}] returned no partition`, { retryable: true });
    if (found.errorCode !== 0) {
      if (found.errorCode === 1)
        throw new SmsWorkerError('KAFKA_OFFSET_OUT_OF_RANGE', `offset ${offset} is out of range for ${topic}[${partition}]`, { retryable: true });
      await this.#cluster.refreshMetadata().catch(() => undefined);
      throw new SmsWorkerError('KAFKA_FETCH_FAILED', `fetch of ${topic}[${partition}] failed with error code ${found.errorCode}`, { retryable: true });
    }
    return found;
  }

  /**
   * The partition's high watermark: the offset after the last record written, transactions still
   * open or not yet marked included. (kafkajs's admin lists offsets `read_committed`, which gives
   * the last stable offset instead: reading to that would miss a transaction whose commit is
   * decided but whose markers are not written yet, e.g. right after a broker restart.)
   */
  async highWatermark(topic: string, partition: number, from: bigint): Promise<bigint> {
    return (await this.ends(topic, partition, from)).high;
  }

  /** The high watermark and the last stable offset (below it when a transaction is open there), in one fetch. */
  async ends(topic: string, partition: number, from: bigint): Promise<{ high: bigint; stable: bigint }> {
    const found = await this.#fetch(topic, partition, from, 0);
    return { high: BigInt(found.highWatermark), stable: BigInt(found.lastStableOffset) };
  }

  /**
   * Committed records in [from, to), handed to `visit` one fetch at a time (memory holds one
   * fetch, about `maxBytes`, not the range): every record below `to` that a read_committed reader
   * will ever see. `to` must not exceed what is written, or this waits (bounded by `deadlineMs`)
   * for open transactions to be decided.
   */
  async forEach(
    topic: string,
    partition: number,
    from: bigint,
    to: bigint,
    visit: (record: ReadRecord) => void | Promise<void>,
    deadlineMs = 30_000,
  ): Promise<void> {
    await this.#walk(`${topic}[${partition}]`, from, to, deadlineMs, async (next) => {
      const read = await this.#readOnce(topic, partition, next, to, 200);
      for (const record of read.records) await visit(record);
      return read.next;
    });
  }

  /**
   * Every record in [from, to) as written, read_uncommitted: for the records of a transaction that
   * holds the partition's last stable offset (from is that offset), which a read_committed reader
   * cannot see yet. Control records are skipped; `to` must not exceed the high watermark. Bounded
   * by `deadlineMs`, one fetch (about `maxBytes`) in memory at a time.
   */
  async forEachWritten(
    topic: string,
    partition: number,
    from: bigint,
    to: bigint,
    visit: (record: ReadRecord) => void | Promise<void>,
    deadlineMs = 10_000,
  ): Promise<void> {
    await this.#walk(`${topic}[${partition}] as written`, from, to, deadlineMs, async (start) => {
      const found = await this.#fetch(topic, partition, start, 0, READ_UNCOMMITTED);
      let next = start;
      for (const record of found.messages) {
        const offset = BigInt(record.offset);
        if (offset < next) continue;
        if (offset >= to) return to;
        next = offset + 1n;
        if (record.isControlRecord !== true) await visit({ offset, key: record.key ?? null, value: record.value ?? null });
      }
      // Nothing at or past `start` came back (compaction's gap, or the end moved back): stop there.
      return next === start ? undefined : next;
    });
  }

  /**
   * The records of aborted transactions in [from, to), below the last stable offset, each with the
   * aborted transaction it was written in (abortedRecords): what a read_committed reader never sees.
   * Bounded by `deadlineMs`, one fetch (about `maxBytes`) in memory at a time.
   */
  async forEachAborted(
    topic: string,
    partition: number,
    from: bigint,
    to: bigint,
    visit: (record: ReadRecord, transaction: string) => void | Promise<void>,
    deadlineMs = 10_000,
  ): Promise<void> {
    await this.#walk(`the aborted records of ${topic}[${partition}]`, from, to, deadlineMs, async (next) => {
      const found = await this.#fetch(topic, partition, next, 0);
      const end = BigInt(found.lastStableOffset) < to ? BigInt(found.lastStableOffset) : to;
      const below = found.messages.filter((m) => BigInt(m.offset) >= next && BigInt(m.offset) < end);
      for (const { record, transaction } of abortedRecords(below, found.abortedTransactions))
        await visit({ offset: BigInt(record.offset), key: record.key ?? null, value: record.value ?? null }, transaction);
      const last = below.at(-1);
      return last === undefined ? undefined : BigInt(last.offset) + 1n;
    });
  }

  /**
   * What became of a record batch a transaction wrote at `baseOffset`, its values among `candidates`
   * (the transaction's records for this topic; a result or dead letter names its command): `ours`,
   * the batch's records as written (read from `baseOffset` while they are candidates), and `fate`:
   * the values of those aborted (a read_committed reader sees the rest); `open` when the partition's
   * earliest open transaction is that one (it hangs here: the producer's next marker decides it);
   * undefined when another transaction below the batch's end stays open past `waitMs` (not told yet).
   */
  async fateOfWritten(
    topic: string,
    partition: number,
    baseOffset: bigint,
    candidates: readonly Buffer[],
    waitMs = UNDECIDED_WAIT_MS,
  ): Promise<{ readonly ours: Buffer[]; readonly fate: Buffer[] | 'open' | undefined }> {
    const wanted = new Set(candidates.map((value) => value.toString('base64')));
    const isCandidate = (value: Buffer | null): value is Buffer => value !== null && wanted.has(value.toString('base64'));
    const { high } = await this.ends(topic, partition, baseOffset);
    const last = baseOffset + BigInt(candidates.length) < high ? baseOffset + BigInt(candidates.length) : high;
    const ours: Buffer[] = [];
    let end = baseOffset;
    await this.forEachWritten(topic, partition, baseOffset, last, (record) => {
      if (record.offset !== end || !isCandidate(record.value)) return;
      ours.push(record.value);
      end = record.offset + 1n;
    });
    if (ours.length === 0) return { ours, fate: undefined };
    const deadline = Date.now() + waitMs;
    for (;;) {
      const { stable } = await this.ends(topic, partition, baseOffset);
      if (stable >= end) break;
      let hangs = false;
      await this.forEachWritten(topic, partition, stable, stable + 1n, (record) => void (hangs = isCandidate(record.value)));
      if (hangs) return { ours, fate: 'open' };
      if (Date.now() >= deadline) return { ours, fate: undefined };
      await new Promise((resolve) => setTimeout(resolve, UNDECIDED_POLL_MS));
    }
    const aborted: Buffer[] = [];
    await this.forEachAborted(topic, partition, baseOffset, end, (record) => void (record.value !== null && aborted.push(record.value)));
    return { ours, fate: aborted };
  }

  /**
   * The reads' loop over [from, to): `step` reads from an offset and says where to go on from
   * (undefined: stop early); past `deadlineMs` it fails with KAFKA_READ_TIMEOUT, naming `what`.
   */
  async #walk(what: string, from: bigint, to: bigint, deadlineMs: number, step: (next: bigint) => Promise<bigint | undefined>): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    let next: bigint | undefined = from;
    while (next !== undefined && next < to) {
      if (Date.now() > deadline)
        throw new SmsWorkerError('KAFKA_READ_TIMEOUT', `reading ${what} from ${from} to ${to} took longer than ${deadlineMs} ms (stuck at ${next})`, {
          retryable: true,
        });
      next = await step(next);
    }
  }

  /**
   * What one fetch from `from` returns that a read_committed reader sees (below the last stable
   * offset), without waiting for more: the records and the offset to read from next. For a reader
   * that looks again and again (a new owner watching for handovers).
   */
  async readAvailable(topic: string, partition: number, from: bigint): Promise<{ records: ReadRecord[]; next: bigint }> {
    return this.#readOnce(topic, partition, from, undefined, 0);
  }

  async #readOnce(
    topic: string,
    partition: number,
    from: bigint,
    to: bigint | undefined,
    maxWaitTime: number,
  ): Promise<{ records: ReadRecord[]; next: bigint }> {
    const found = await this.#fetch(topic, partition, from, maxWaitTime);
    const stable = BigInt(found.lastStableOffset);
    const records = filterAbortedRecords(found.messages, found.abortedTransactions);
    const out: ReadRecord[] = [];
    let next = from;
    let advanced = false;
    for (const record of records) {
      const offset = BigInt(record.offset);
      if (offset < next) continue;
      // Visible to read_committed only below the last stable offset.
      if (offset >= stable) break;
      if (to !== undefined && offset >= to) {
        next = to;
        break;
      }
      next = offset + 1n;
      advanced = true;
      if (record.isControlRecord === true) continue;
      out.push({ offset, key: record.key ?? null, value: record.value ?? null });
    }
    const end = to === undefined || stable < to ? stable : to;
    if (!advanced && next < end) {
      // Nothing visible was returned: skip what the broker did return (aborted records, control
      // records), or, when it returned nothing below the stable offset, the gap compaction left.
      const raw = found.messages.filter((m) => BigInt(m.offset) >= next && BigInt(m.offset) < stable);
      const last = raw[raw.length - 1];
      if (last !== undefined) next = BigInt(last.offset) + 1n;
      else next = end;
    }
    return { records: out, next };
  }

  /**
   * Whether the transactions open in `topic`[`partition`] can still get their markers from the
   * coordinator of `transactionalId` (transaction-states.ts): the coordinator is asked first, then
   * the partition's leader, so `abandoned` means still open after the coordinator was done. Any
   * failure (a broker before Kafka 3.0, a missing ACL, a moved leader) is `unknown`, never thrown:
   * the caller then waits as it did without this. So is an answer slower than `timeoutMs` (kafkajs's
   * own request timeout is 30 s), so that the caller's wait stays its own.
   */
  async markerOutlook(topic: string, partition: number, transactionalId: string, options: OutlookOptions = {}): Promise<MarkerOutlook> {
    const { notBefore = Number.NEGATIVE_INFINITY, timeoutMs = MARKER_OUTLOOK_TIMEOUT_MS } = options;
    if (this.#closed) return 'unknown';
    const key = `${transactionalId}\u0000${topic}[${partition}]`;
    // One ask at a time per partition: one that outlived its timeout still runs (kafkajs's retries).
    // One begun before `notBefore` (before the caller's fence) may answer for a transaction the
    // fence has since ended: not reused; the caller asks again once it is over.
    const running = this.#outlooks.get(key);
    if (running !== undefined && running.since < notBefore) return 'unknown';
    let asking = running?.answer;
    if (asking === undefined) {
      const answer = this.#askOutlook(topic, partition, transactionalId).catch((): MarkerOutlook => 'unknown');
      asking = answer;
      this.#outlooks.set(key, { since: performance.now(), answer });
      void answer.finally(() => this.#outlooks.delete(key));
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<MarkerOutlook>((resolve) => {
      timer = setTimeout(() => resolve('unknown'), timeoutMs);
    });
    try {
      return await Promise.race([asking, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The coordinator, then the leader's stable offset, its producers and its stable offset again (markerOutlook in transaction-states.ts says why). */
  async #askOutlook(topic: string, partition: number, transactionalId: string): Promise<MarkerOutlook> {
    // Closed meanwhile: no reconnecting for an answer nobody waits for.
    const open = (): void => {
      if (this.#closed) throw new SmsWorkerError('KAFKA_READER_CLOSED', 'the partition reader is closed');
    };
    open();
    const coordinator = await this.#cluster.findGroupCoordinator({ groupId: transactionalId, coordinatorType: TRANSACTION_COORDINATOR });
    const held = decodeDescribeTransactions(await sendRaw(coordinator, describeTransactionsRequest(transactionalId)), transactionalId);
    open();
    const leader = await this.#broker(topic, partition);
    const before = await leaderStableOffset(leader, topic, partition);
    const transactions = decodeDescribeProducers(await sendRaw(leader, describeProducersRequest(topic, partition)), topic, partition);
    const after = await leaderStableOffset(leader, topic, partition);
    return markerOutlook(transactions, held, [before, after]);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#connected === undefined) return;
    this.#connected = undefined;
    await this.#cluster.disconnect().catch(() => undefined);
  }
}
