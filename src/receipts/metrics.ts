/**
 * The receiver's own metrics registry (a separate process from the worker, served on
 * RECEIPTS_HTTP_PORT at /metrics). Label values that come from the service (status, region) are
 * bounded like the worker's, so a misbehaving sender cannot blow up the series count.
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { BoundedLabel } from '../metrics/metrics.ts';

/** Why a post was refused: the values of `sms_receipts_rejected_total{reason}`. */
export const REJECT_REASONS = ['unauthorized', 'rate_limited', 'too_large', 'malformed', 'invalid', 'kafka_unavailable', 'method', 'not_found'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export type ReceiverMetrics = ReturnType<typeof createReceiverMetrics>;

export function createReceiverMetrics(registry: Registry = new Registry()) {
  const prefix = 'sms_receipts_';
  collectDefaultMetrics({ register: registry, prefix });
  const statuses = new BoundedLabel(20);
  const regions = new BoundedLabel(250);
  const receipts = new Counter({
    name: `${prefix}receipts_total`,
    help: 'Delivery reports published to the receipts topic, by reported status and region.',
    labelNames: ['status', 'region'] as const,
    registers: [registry],
  });
  const deliverySeconds = new Histogram({
    name: `${prefix}delivery_seconds`,
    help: 'Time from submitDate to doneDate of published reports (both readable), by outcome.',
    labelNames: ['outcome'] as const,
    buckets: [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 21_600, 86_400],
    registers: [registry],
  });
  const rejected = new Counter({
    name: `${prefix}rejected_total`,
    help: 'Report posts answered with an error, by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const publishSeconds = new Histogram({
    name: `${prefix}publish_seconds`,
    help: 'Time from a valid post to Kafka acknowledging its receipts (successful publishes).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  for (const reason of REJECT_REASONS) rejected.inc({ reason }, 0);
  return {
    registry,
    published(status: string, region: string | null): void {
      receipts.inc({ status: statuses.value(status.toLowerCase()), region: regions.value(region ?? 'unknown') });
    },
    delivery(outcome: string, seconds: number): void {
      deliverySeconds.observe({ outcome }, seconds);
    },
    rejected(reason: RejectReason): void {
      rejected.inc({ reason });
    },
    publishSeconds(seconds: number): void {
      publishSeconds.observe(seconds);
    },
  };
}
