/**
 * The receiver as one process: the report endpoint (RECEIPTS_PORT), its publisher, and
 * /metrics, /healthz, /readyz on a port of their own (RECEIPTS_HTTP_PORT), so an Ingress routes
 * the internet to reports only. Library code: signals and exit stay with the CLI (cli/receipts.ts).
 */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { createKafka, type KafkaClientOptions } from '../kafka/client.ts';
import { KafkaKeyedProducer } from '../kafka/keyed-producer.ts';
import type { KeyedRecordProducer } from '../kafka/ports.ts';
import { startHttpServer } from '../metrics/http-server.ts';
import type { Logger } from '../observability/logger.ts';
import { createRegistry } from '../schema/codec.ts';
import type { ReceiverConfig } from './config.ts';
import { createReceiverMetrics } from './metrics.ts';
import { ReceiptPublisher } from './publisher.ts';
import { startReportServer } from './server.ts';

export interface RunningReceiver {
  /** Base URL of the report endpoint (`http://host:port`); reports go to `${url}${path}[/token]`. */
  readonly url: string;
  readonly port: number;
  /** Port of /metrics, /healthz, /readyz. */
  readonly httpPort: number;
  /** Stops taking reports, lets posts in progress finish (up to the shutdown timeout), disconnects. Idempotent. */
  close(): Promise<void>;
}

export interface ReceiverDependencies {
  readonly logger: Logger;
  /** The receipts' producer (idempotent, acks=all, see src/kafka/keyed-producer.ts); by default one is made from the config. */
  readonly producer?: KeyedRecordProducer;
  /** Options for the Kafka client made from the config (tests pass a socketFactory). */
  readonly kafkaOptions?: KafkaClientOptions;
  readonly registry?: SchemaRegistry;
}

export async function startReceiver(config: ReceiverConfig, deps: ReceiverDependencies): Promise<RunningReceiver> {
  const { logger } = deps;
  // kafkajs's own retries stay short: a publish must fail (→ 503) within RECEIPTS_PUBLISH_TIMEOUT_MS.
  const producer =
    deps.producer ??
    new KafkaKeyedProducer(
      createKafka(config.kafka, logger, `${config.kafka.clientId}-receipts`, {
        retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
        connectionTimeout: Math.min(5_000, Math.max(500, Math.floor(config.publishTimeoutMs / 4))),
        ...deps.kafkaOptions,
      }),
      { sendTimeoutMs: config.publishTimeoutMs },
    );
  const registry = deps.registry ?? createRegistry(config.registry.url, config.registry.auth);
  const metrics = createReceiverMetrics();
  const publisher = new ReceiptPublisher(producer, registry, { topic: config.topic, timeoutMs: config.publishTimeoutMs });
  const releases: (() => Promise<void>)[] = [];
  const releaseAll = async (): Promise<void> => {
    // LIFO, every step even when one fails.
    for (const release of releases.reverse()) await release().catch((error: unknown) => logger.warn({ err: String(error) }, 'receiver cleanup step failed'));
  };
  try {
    await publisher.connect();
    releases.push(() => publisher.disconnect());
    const health = await startHttpServer({
      port: config.httpPort,
      registry: metrics.registry,
      health: {
        live: () => ({ ok: true, detail: 'receiving' }),
        ready: () => (publisher.ready ? { ok: true, detail: 'producer connected' } : { ok: false, detail: 'producer not connected' }),
      },
    });
    releases.push(() => health.close());
    const server = await startReportServer({
      host: config.host,
      port: config.port,
      path: config.path,
      credentials: config.credentials,
      maxBodyBytes: config.maxBodyBytes,
      maxReports: config.maxReports,
      rateLimit: config.rateLimit,
      trustedProxyHops: config.trustedProxyHops,
      publish: (receipts) => publisher.publish(receipts),
      metrics,
      logger,
    });
    releases.push(() => server.close(config.shutdownTimeoutMs));
    logger.info(
      {
        port: server.port,
        httpPort: health.port,
        topic: config.topic,
        path: config.path,
        pathToken: config.credentials.pathToken !== undefined,
        basicAuth: config.credentials.basic !== undefined,
      },
      'receipts receiver listening',
    );
    let closed: Promise<void> | undefined;
    return {
      url: server.url,
      port: server.port,
      httpPort: health.port,
      close: () => (closed ??= releaseAll()),
    };
  } catch (error) {
    await releaseAll();
    throw error;
  }
}
