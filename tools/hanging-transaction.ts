/**
 * Leaves a hanging transaction in a partition, for tests and diagnostics only: a transaction whose
 * records are in the partition while its transaction coordinator never heard of the partition, so
 * no marker ever ends it and the partition's last stable offset stays there (what `npm run chaos`
 * met once, written at the instant its broker was restarted). Made with a second copy of kafkajs
 * (the project's own stays as it is) whose producer skips AddPartitionsToTxn, with the broker's
 * transaction verification (KIP-890) turned off for the moment it writes. Point it at a throwaway
 * broker: it changes a cluster-wide setting for about a second.
 */
import { createRequire } from 'node:module';
import type * as KafkaJs from 'kafkajs';
import type { PartitionReader } from '../src/kafka/partition-reader.ts';
import { replaceScheduleCheck } from '../src/kafka/request-queue.ts';

const require = createRequire(import.meta.url);

/** The rogue copy: loaded once, with every producer's AddPartitionsToTxn skipped while `skipping` is set. */
let rogue: { readonly kafkajs: typeof KafkaJs; skipping: boolean } | undefined;

function rogueKafkajs(): NonNullable<typeof rogue> {
  if (rogue !== undefined) return rogue;
  const root = require.resolve('kafkajs').replace(/index\.js$/, '');
  const cached = Object.keys(require.cache).filter((key) => key.startsWith(root));
  const saved = new Map(cached.map((key) => [key, require.cache[key]]));
  for (const key of cached) delete require.cache[key];
  const eosPath = require.resolve('kafkajs/src/producer/eosManager');
  const createEosManager = require(eosPath) as (options: unknown) => Record<string, unknown>;
  const state = { kafkajs: undefined as unknown as typeof KafkaJs, skipping: false };
  (require.cache[eosPath] as NodeJS.Module).exports = (options: unknown) => {
    const manager = createEosManager(options);
    const add = manager['addPartitionsToTransaction'] as (topicData: unknown) => Promise<unknown>;
    manager['addPartitionsToTransaction'] = async (topicData: unknown) => (state.skipping ? undefined : add(topicData));
    return manager;
  };
  // The copy's own request queue, with the worker's fix (no 1 ms timer, no TimeoutNegativeWarning in the test's output).
  replaceScheduleCheck(require('kafkajs/src/network/requestQueue/index.js'));
  state.kafkajs = require('kafkajs') as typeof KafkaJs;
  // The project's copy stays the one `require('kafkajs')` finds.
  for (const key of Object.keys(require.cache)) if (key.startsWith(root)) delete require.cache[key];
  for (const [key, module] of saved) if (module !== undefined) require.cache[key] = module;
  rogue = state;
  return state;
}

/**
 * Writes one record to `topic`[`partition`] in a transaction of `transactionalId` that its
 * coordinator never hears of, and leaves it open (after one normal committed transaction, so the
 * producer id and epoch are the ones the coordinator has for the id).
 */
export async function leaveHangingTransaction(options: HangingOptions): Promise<void> {
  // The broker applies the setting a moment after accepting it; until then its verification adds
  // the partition for the producer and nothing hangs. Look, and go again if so.
  for (let attempt = 1; ; attempt++) {
    await writeUnknownTransaction(options);
    if (await hangs(options)) return;
    if (attempt === 5) throw new Error(`no transaction was left hanging in ${options.topic}[${options.partition}] after ${attempt} attempts`);
  }
}

interface HangingOptions {
  readonly brokers: readonly string[];
  readonly admin: KafkaJs.Admin;
  /** Reads the partition's true end (its high watermark). */
  readonly reader: Pick<PartitionReader, 'highWatermark'>;
  readonly transactionalId: string;
  readonly topic: string;
  readonly partition: number;
  /** The hanging transaction's record (default: key `hanging`, a line of text). */
  readonly record?: { readonly key: string; readonly value: Buffer };
}

/** Whether the partition's last stable offset stays below its end (the admin's offsets are read_committed: the stable one). */
async function hangs(options: HangingOptions): Promise<boolean> {
  for (let look = 0; look < 10; look++) {
    const stable = (await options.admin.fetchTopicOffsets(options.topic)).find((o) => o.partition === options.partition);
    const end = await options.reader.highWatermark(options.topic, options.partition, 0n);
    if (stable !== undefined && BigInt(stable.high) >= end) return false;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return true;
}

async function writeUnknownTransaction(options: HangingOptions): Promise<void> {
  const r = rogueKafkajs();
  const { brokers: nodes } = await options.admin.describeCluster();
  const setVerification = (value: 'true' | 'false') =>
    options.admin.alterConfigs({
      validateOnly: false,
      resources: nodes.map((node) => ({
        type: r.kafkajs.ConfigResourceTypes.BROKER,
        name: String(node.nodeId),
        configEntries: [{ name: 'transaction.partition.verification.enable', value }],
      })),
    });
  const producer = new r.kafkajs.Kafka({ brokers: [...options.brokers], clientId: 'rogue', logLevel: r.kafkajs.logLevel.NOTHING }).producer({
    transactionalId: options.transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await setVerification('false');
  try {
    // A dynamic broker setting takes effect a moment after it is accepted.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await producer.connect();
    const first = await producer.transaction();
    await first.send({ topic: options.topic, messages: [{ partition: options.partition, key: 'committed', value: 'before' }] });
    await first.commit();
    r.skipping = true;
    const second = await producer.transaction();
    await second.send({
      topic: options.topic,
      messages: [{ partition: options.partition, ...(options.record ?? { key: 'hanging', value: 'a transaction nobody knows' }) }],
    });
  } finally {
    r.skipping = false;
    await producer.disconnect();
    await setVerification('true');
  }
}
