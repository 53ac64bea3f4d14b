import type { Kafka, KafkaConfig, logCreator, SASLOptions } from 'kafkajs';
import kafkajs from './kafkajs.ts';
import type { KafkaSettings } from '../config/index.ts';
import type { Logger } from '../observability/logger.ts';

const { Kafka: KafkaClient, logLevel } = kafkajs;

/** Routes kafkajs's own log lines into the worker's structured log, at matching levels. */
function kafkaLogCreator(logger: Logger): logCreator {
  return () =>
    ({ level, log }) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = log;
      // Our transactional producers retry a bounded number of times on purpose: a transaction
      // that cannot complete is aborted and redone with a fresh producer (transaction-committer).
      if (message.startsWith('Limiting retries for the idempotent producer')) return;
      const child = { component: 'kafkajs', ...extra };
      if (level === logLevel.ERROR) logger.error(child, message);
      else if (level === logLevel.WARN) logger.warn(child, message);
      else if (level === logLevel.INFO) logger.debug(child, message);
      else logger.trace(child, message);
    };
}

export function createKafka(settings: KafkaSettings, logger: Logger, clientId = settings.clientId): Kafka {
  const config: KafkaConfig = {
    clientId,
    brokers: [...settings.brokers],
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(logger),
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 10_000 },
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
  };
  if (settings.ssl !== false) config.ssl = { ...settings.ssl };
  if (settings.sasl !== undefined) config.sasl = { ...settings.sasl } as SASLOptions;
  return new KafkaClient(config);
}
