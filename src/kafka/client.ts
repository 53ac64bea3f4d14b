import type { ISocketFactory, Kafka, KafkaConfig, logCreator, RetryOptions, SASLOptions } from 'kafkajs';
import kafkajs from './kafkajs.ts';
import type { KafkaSettings } from '../config/index.ts';
import type { Logger } from '../observability/logger.ts';

const { Kafka: KafkaClient, logLevel } = kafkajs;

function kafkaFields(extra: Record<string, unknown>): Record<string, unknown> {
  return { component: 'kafkajs', ...extra };
}

/**
 * kafkajs's error-level lines that only say a rebalance is under way, or what follows one: a new
 * owner's transactional producer answered CONCURRENT_TRANSACTIONS while the previous owner's
 * transaction is still being completed after the fence (kafkajs retries it; if the retries run
 * out, the transaction committer logs the failure itself).
 */
export function isRoutineRebalance(message: string, extra: Record<string, unknown>): boolean {
  const text = `${message} ${typeof extra['error'] === 'string' ? extra['error'] : ''}`;
  return /group is rebalancing|REBALANCE_IN_PROGRESS|rebalance in progress|CONCURRENT_TRANSACTIONS|another concurrent operation on the same transaction/i.test(
    text,
  );
}

/** Routes kafkajs's own log lines into the worker's structured log, at matching levels. */
function kafkaLogCreator(logger: Logger): logCreator {
  return () =>
    ({ level, log }) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = log;
      // Our transactional producers retry a bounded number of times on purpose: a transaction
      // that cannot complete is aborted and redone with a fresh producer (transaction-committer).
      if (message.startsWith('Limiting retries for the idempotent producer')) return;
      // kafkajs's one-time notice that its v2 default partitioner differs from v1's: nothing here
      // depends on v1's partitioning (results are keyed by commandId, the ledger names partitions).
      if (message.startsWith('KafkaJS v2.0.0 switched default partitioner')) return;
      // A rebalance is routine (pods start, stop, scale): kafkajs logs each heartbeat answered
      // "group is rebalancing" as an error; it is information.
      if (level === logLevel.ERROR && isRoutineRebalance(message, extra)) {
        logger.info(kafkaFields(extra), message);
        return;
      }
      const child = kafkaFields(extra);
      if (level === logLevel.ERROR) logger.error(child, message);
      else if (level === logLevel.WARN) logger.warn(child, message);
      else if (level === logLevel.INFO) logger.debug(child, message);
      else logger.trace(child, message);
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
  const config: KafkaConfig = {
    clientId,
    brokers: [...settings.brokers],
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(logger),
    retry: options.retry ?? { retries: 8, initialRetryTime: 200, maxRetryTime: 10_000 },
    connectionTimeout: options.connectionTimeout ?? 5_000,
    requestTimeout: 30_000,
    ...(options.socketFactory !== undefined && { socketFactory: options.socketFactory }),
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
