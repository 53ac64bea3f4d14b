/**
 * Builds the guards the configuration turns on (none by default: today's behaviour) with their
 * metrics and logs: the velocity limits per destination and the spend caps.
 */
import type { WorkerConfig } from '../../config/index.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import { DestinationGuard } from './destination-guard.ts';
import { SpendHolds, type SpendObserver } from './spend-holds.ts';
import { spendCapEnabled } from './spend-cap.ts';
import { velocityEnabled } from './velocity.ts';
import { velocityReport } from './velocity-report.ts';
import { formatMicros } from './amounts.ts';

export function guardsOf(
  guard: WorkerConfig['guard'],
  metrics: WorkerMetrics,
  log: Logger,
): { destinations: DestinationGuard | undefined; spend: SpendHolds | undefined } {
  const destinations = velocityEnabled(guard.velocity) ? new DestinationGuard({ settings: guard.velocity, observer: velocityReport(metrics, log) }) : undefined;
  const spend = spendCapEnabled(guard.spend) ? new SpendHolds({ settings: guard.spend, observer: spendReport(metrics, log) }) : undefined;
  return { destinations, spend };
}

/** The `spend_cap` pause: `sms_worker_paused{reason="spend_cap"}`, a warning when it starts, a line when it ends; spend gauges. */
function spendReport(metrics: WorkerMetrics, log: Logger): SpendObserver {
  return {
    onPause(pause) {
      metrics.paused.set({ reason: 'spend_cap' }, pause === undefined ? 0 : 1);
      if (pause === undefined) {
        log.info('spend cap has room again: sending resumed');
        return;
      }
      const until = pause.untilMs === undefined ? 'when a send in flight settles' : `at ${new Date(pause.untilMs).toISOString()}`;
      log.warn(
        {
          reason: 'spend_cap',
          window: pause.window,
          spent: formatMicros(pause.spent),
          cap: formatMicros(pause.cap),
          resumesAt: pause.untilMs === undefined ? null : new Date(pause.untilMs).toISOString(),
        },
        `sending paused (spend_cap): ${formatMicros(pause.spent)} spent of this worker's cap of ${formatMicros(pause.cap)} per ${pause.window}; commands wait, and sending resumes ${until}`,
      );
    },
    onSpend(snapshot) {
      for (const [window, { spent, cap }] of Object.entries(snapshot)) {
        metrics.spendMicros.set({ window }, Number(spent));
        if (cap !== undefined) metrics.spendCapMicros.set({ window }, Number(cap));
      }
    },
  };
}
