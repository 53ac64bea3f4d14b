import type { ISocketFactory, Kafka, KafkaConfig, logCreator, RetryOptions, SASLOptions } from 'kafkajs';
import { defaultSocketFactory, seedBrokers } from './seed-brokers.ts';
import { withDeadSocketGuard } from './dead-sockets.ts';
import kafkajs from './kafkajs.ts';
import type { KafkaSettings } from '../config/index.ts';
import type { Logger } from '../observability/logger.ts';

const { Kafka: KafkaClient, logLevel } = kafkajs;

function kafkaFields(extra: Record<string, unknown>): Record<string, unknown> {
  return { component: 'kafkajs', ...extra };
}

/** kafkajs's error-level lines that only say a rebalance is under way (a few per rebalance). */
export function isRoutineRebalance(message: string, extra: Record<string, unknown>): boolean {
  return /group is rebalancing|REBALANCE_IN_PROGRESS|rebalance in progress/i.test(lineText(message, extra));
}

/**
 * kafkajs's error-level lines for CONCURRENT_TRANSACTIONS: a transaction begun while the broker
 * still writes the previous one's commit markers (marks commit back to back, so this is routine
 * under load), or a new owner's first one while the fenced owner's is being aborted. kafkajs
 * retries it within milliseconds; if the retries run out, the transaction committer logs that.
 */
export function isConcurrentTransactions(message: string, extra: Record<string, unknown>): boolean {
  return /CONCURRENT_TRANSACTIONS|another concurrent operation on the same transaction/i.test(lineText(message, extra));
}

/**
 * kafkajs's error-level line for one request answered "not the coordinator", "coordinator loading
 * or not available", "not the leader" or "no leader yet": a broker restarting or a leader election
 * moved what the request was for (a broker of two restarted under a worker logged about 60 of them in
 * test/repro/broker-failover.repro.test.ts). kafkajs looks the new one up and retries; a
 * transaction that still fails is retried or reported by the worker (partition-transaction.ts),
 * and a consumer that gives up is reported as a crash. So the line is a warning, not an error:
 * a routine restart of the brokers should not page anyone. Only the per-request lines are meant,
 * not a crash that names such an error.
 */
export function isBrokerMove(message: string, extra: Record<string, unknown>): boolean {
  if (!/^(\[\w+\] )?(Response |Failed to send messages: )/.test(message)) return false;
  return /not the correct coordinator|coordinator is loading|coordinator is not available|not the leader for that topic-partition|no leader for this topic-partition/i.test(
    lineText(message, extra),
  );
}

/**
 * kafkajs's error-level line for a metadata request answered "this server does not host this
 * topic-partition": a KRaft broker answers that for a topic it created a moment ago and has not
 * yet applied (the worker creates its ledger topics at start, and createTopics waits on exactly
 * this answer as "not yet"; seen in CI). kafkajs retries the request. A topic that really is
 * missing stops the worker at its start-up check (TOPICS_MISSING), and one deleted under a running
 * worker fails the sends to it, which the worker reports itself: so the line is a warning.
 */
export function isTopicNotYetApplied(message: string, extra: Record<string, unknown>): boolean {
  return /^(\[\w+\] )?Response Metadata\b/.test(message) && /does not host this topic-partition/i.test(lineText(message, extra));
}

function lineText(message: string, extra: Record<string, unknown>): string {
  return `${message} ${typeof extra['error'] === 'string' ? extra['error'] : ''}`;
}

type LineLevel = 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'drop';

/** The level a kafkajs log line gets in the worker's log (pure, so each rule is tested). */
export function kafkaLineLevel(level: number, message: string, extra: Record<string, unknown>): LineLevel {
  // Our transactional producers retry a bounded number of times on purpose: a transaction
  // that cannot complete is aborted and redone with a fresh producer (partition-transaction).
  if (message.startsWith('Limiting retries for the idempotent producer')) return 'drop';
  // kafkajs's one-time notice that its v2 default partitioner differs from v1's: nothing here
  // depends on v1's partitioning (results are keyed by commandId, the ledger names partitions).
  if (message.startsWith('KafkaJS v2.0.0 switched default partitioner')) return 'drop';
  if (level === logLevel.ERROR) {
    // Retried at once, and frequent under load (up to one per transaction): debug, or the
    // default log level would carry a line or two per transaction.
    if (isConcurrentTransactions(message, extra)) return 'debug';
    // A rebalance is routine (pods start, stop, scale): kafkajs logs each heartbeat answered
    // "group is rebalancing" as an error; it is information.
    if (isRoutineRebalance(message, extra)) return 'info';
    if (isBrokerMove(message, extra) || isTopicNotYetApplied(message, extra)) return 'warn';
    return 'error';
  }
  if (level === logLevel.WARN) return 'warn';
  if (level === logLevel.INFO) return 'debug';
  return 'trace';
}

/** Routes kafkajs's own log lines into the worker's structured log, at matching levels. */
function kafkaLogCreator(logger: Logger): logCreator {
  return () =>
    ({ level, log }) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = log;
      const to = kafkaLineLevel(level, message, extra);
      if (to !== 'drop') logger[to](kafkaFields(extra), message);
    };
}

export interface KafkaClientOptions {
  /** kafkajs's own request retries; the default suits the worker (bounded, then the caller decides). */
  readonly retry?: RetryOptions;
  /** How sockets to brokers are opened; tests route them through a proxy they can close (test/helpers/tcp-proxy.ts). */
  readonly socketFactory?: ISocketFactory;
  /** kafkajs's connection timeout (ms). @defaultValue 5000 */
  readonly connectionTimeout?: number;
}

/**
 * The one way a kafkajs client is made: by the worker, the CLI (`produce`, `tail`), the local
 * stack's probe, the benchmarks and the tests. TLS and SASL come from the settings, so every user
 * honours KAFKA_SSL* and KAFKA_SASL_*; kafkajs's log goes to `logger` (a silent one quiets it).
 */
export function createKafka(settings: KafkaSettings, logger: Logger, clientId = settings.clientId, options: KafkaClientOptions = {}): Kafka {
  // IPv6 seed brokers ([::1]:9092) reach kafkajs under stand-in names (seed-brokers.ts).
  const seeds = seedBrokers(settings.brokers, options.socketFactory);
  const config: KafkaConfig = {
    clientId,
    brokers: seeds.brokers,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(logger),
    retry: options.retry ?? { retries: 8, initialRetryTime: 200, maxRetryTime: 10_000 },
    connectionTimeout: options.connectionTimeout ?? 5_000,
    requestTimeout: 30_000,
    // Its sockets leave a destroyed socket's unref alone (dead-sockets.ts).
    socketFactory: withDeadSocketGuard(seeds.socketFactory ?? defaultSocketFactory),
  };
  if (settings.ssl !== false) config.ssl = { ...settings.ssl };
  if (settings.sasl !== undefined) config.sasl = { ...settings.sasl } as SASLOptions;
  return new KafkaClient(config);
}

/** Settings for a plaintext, unauthenticated cluster: the local stack, the tests and the benchmarks. */
export function plaintextKafkaSettings(brokers: string | readonly string[], clientId: string): KafkaSettings {
  const list =
    typeof brokers === 'string'
      ? brokers
          .split(',')
          .map((b) => b.trim())
          .filter((b) => b !== '')
      : [...brokers];
  return { brokers: list, clientId, ssl: false, sasl: undefined };
}
