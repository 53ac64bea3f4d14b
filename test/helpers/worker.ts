import type { Kafka } from 'kafkajs';
import { pino } from 'pino';
import { loadConfig, type WorkerConfig } from '../../src/config/index.ts';
import type { SendCommand } from '../../src/contracts/command.ts';
import type { CommandResult } from '../../src/contracts/result.ts';
import { CommandPublisher } from '../../src/kafka/command-publisher.ts';
import { ResultReader } from '../../src/kafka/result-reader.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import { Worker } from '../../src/worker/worker.ts';
import { within } from '../../tools/poll.ts';
import { createTopics, eventually, testBrokers, testKafka, uniqueName } from './kafka.ts';

export { within };
import { inject } from 'vitest';

export interface TestTopics {
  readonly commands: string;
  readonly results: string;
  readonly deadLetter: string;
  readonly ledger: string;
  readonly group: string;
  readonly transactionalIdPrefix: string;
}

export function testTopics(): TestTopics {
  const base = uniqueName('w');
  return {
    commands: `${base}.commands`,
    results: `${base}.results`,
    deadLetter: `${base}.dlq`,
    ledger: `${base}.ledger`,
    group: `${base}-group`,
    transactionalIdPrefix: `${base}-tx`,
  };
}

/** Creates a test worker's topics: commands and its ledger with `partitions` each, results and dead letters. */
export async function createWorkerTopics(topics: TestTopics, partitions: number): Promise<void> {
  await createTopics(testKafka(), [
    { topic: topics.commands, partitions },
    { topic: topics.results },
    { topic: topics.deadLetter },
    { topic: topics.ledger, partitions },
  ]);
}

/** The environment a test worker runs with: its own topics and group, fast probes, no fixed port. */
export function workerEnv(topics: TestTopics, sandboxUrl: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    KAFKA_BROKERS: testBrokers().join(','),
    SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
    COMMAND_TOPIC: topics.commands,
    RESULT_TOPIC: topics.results,
    DEAD_LETTER_TOPIC: topics.deadLetter,
    LEDGER_TOPIC: topics.ledger,
    CONSUMER_GROUP: topics.group,
    TRANSACTIONAL_ID_PREFIX: topics.transactionalIdPrefix,
    TOPICS_CREATE: 'true',
    TOPICS_PARTITIONS: '3',
    TOPICS_REPLICATION_FACTOR: '1',
    PROVIDER_BASE_URL: sandboxUrl,
    PROVIDER_ACCESS_KEY_ID: 'test-access-key-id',
    PROVIDER_RESPONSE_TIMEOUT_MS: '3000',
    PROVIDER_RETRY_BASE_MS: '20',
    PROVIDER_RETRY_MAX_DELAY_MS: '200',
    COMMIT_INTERVAL_MS: '20',
    KAFKA_SESSION_TIMEOUT_MS: '8000',
    FUNDS_PROBE_INITIAL_MS: '200',
    FUNDS_PROBE_MAX_MS: '1000',
    BREAKER_PROBE_INITIAL_MS: '200',
    BREAKER_PROBE_MAX_MS: '1000',
    HTTP_PORT: '0',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    ...overrides,
  };
}

/** A worker metric summed over its label sets (a counter's total, a gauge's sum). */
export async function metricTotal(worker: Worker, name: 'recoveries' | 'claimsKept' | 'inFlight' | 'results' | 'lostPartitions'): Promise<number> {
  return (await worker.metrics[name].get()).values.reduce((sum, v) => sum + v.value, 0);
}

export async function startTestWorker(env: Record<string, string>): Promise<{ worker: Worker; config: WorkerConfig }> {
  const config = loadConfig(env);
  const worker = new Worker({ config, logger: createLogger(config.logLevel), lagRefreshMs: 300 });
  await within(45_000, `starting the worker for ${config.topics.commands}`, worker.start());
  return { worker, config };
}

/**
 * A worker without its HTTP server whose log lines at `level` and above are kept, parsed, for the
 * test to read (what it logged is what the test asserts); stopped by `cleanups`.
 */
export async function startLoggedWorker<Line>(
  env: Record<string, string>,
  cleanups: { add(cleanup: () => unknown): void },
  level = 'info',
  startMs = 45_000,
): Promise<{ worker: Worker; logs: Line[] }> {
  const logs: Line[] = [];
  const logger = pino({ level }, { write: (line: string) => void logs.push(JSON.parse(line) as Line) });
  const worker = new Worker({ config: loadConfig(env), logger, http: false });
  await within(startMs, 'starting the worker', worker.start());
  cleanups.add(() => worker.stop());
  return { worker, logs };
}

export async function publisherFor(kafka: Kafka, topic: string): Promise<CommandPublisher> {
  const publisher = new CommandPublisher(kafka, createRegistry(inject('schemaRegistryUrl')), topic);
  await within(45_000, `connecting the publisher of ${topic}`, publisher.connect());
  return publisher;
}

/** Collects every committed result of a topic, grouped by commandId (duplicates stay visible). */
export class ResultCollector {
  readonly byCommand = new Map<string, CommandResult[]>();
  readonly order: CommandResult[] = [];
  readonly #reader: ResultReader;

  private constructor(kafka: Kafka, topic: string) {
    this.#reader = new ResultReader(kafka, createRegistry(inject('schemaRegistryUrl')), topic);
  }

  static async start(topic: string): Promise<ResultCollector> {
    const collector = new ResultCollector(testKafka(), topic);
    const started = collector.#reader.start(
      ({ result }) => {
        collector.order.push(result);
        const list = collector.byCommand.get(result.commandId) ?? [];
        list.push(result);
        collector.byCommand.set(result.commandId, list);
      },
      { fromBeginning: true },
    );
    await within(45_000, `starting the result reader of ${topic}`, started);
    return collector;
  }

  /** Waits for a result of each id, then returns the one result of each (throws on none). */
  async waitFor(commandIds: readonly string[], timeoutMs = 60_000): Promise<Map<string, CommandResult>> {
    await eventually(
      () => (commandIds.every((id) => this.byCommand.has(id)) ? true : undefined),
      timeoutMs,
      `results for ${commandIds.length} commands (have ${commandIds.filter((id) => this.byCommand.has(id)).length})`,
    );
    return new Map(commandIds.map((id) => [id, (this.byCommand.get(id) ?? [])[0] as CommandResult]));
  }

  async stop(): Promise<void> {
    await this.#reader.stop();
  }
}

let counter = 0;
export function textCommand(overrides: Partial<SendCommand> & { to?: string[]; content?: string } = {}): SendCommand {
  counter += 1;
  return {
    commandId: overrides.commandId ?? uniqueName(`cmd${counter}`),
    createdAt: Date.now(),
    expiresAt: overrides.expiresAt ?? null,
    metadata: overrides.metadata ?? { test: 'yes' },
    operation: overrides.operation ?? {
      kind: 'text',
      to: overrides.to ?? ['+8613800138000'],
      signature: 'Acme',
      content: overrides.content ?? 'Hello from the worker tests',
    },
  };
}

export function voiceCommand(to = '18509872103', code = '123456'): SendCommand {
  counter += 1;
  return { commandId: uniqueName(`voice${counter}`), createdAt: Date.now(), expiresAt: null, metadata: {}, operation: { kind: 'voice', to, code } };
}

/**
 * A worker on fresh topics against `sandboxUrl`, a publisher and a result collector, each closed by
 * `cleanups` after the test: what most end-to-end worker tests start from.
 */
export async function startWorkerRig(
  sandboxUrl: string,
  cleanups: { add(cleanup: () => unknown): void },
  overrides: Record<string, string> = {},
): Promise<{
  worker: Worker;
  topics: TestTopics;
  results: ResultCollector;
  publish: (commands: Parameters<CommandPublisher['publish']>[0]) => Promise<void>;
  raw: CommandPublisher;
}> {
  const topics = testTopics();
  const { worker } = await startTestWorker(workerEnv(topics, sandboxUrl, overrides));
  cleanups.add(() => worker.stop());
  const publisher = await publisherFor(testKafka(), topics.commands);
  cleanups.add(() => publisher.disconnect());
  const results = await ResultCollector.start(topics.results);
  cleanups.add(() => results.stop());
  return { worker, topics, results, publish: (c) => within(45_000, 'publishing commands', publisher.publish(c)), raw: publisher };
}
