import { DEFAULT_ACCOUNT } from '../../accounts/accounts.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import type { RecordOutcome } from '../send/record-handler.ts';
import type { Priority } from '../priority/priority.ts';

/** Metrics and one log line for each committed outcome (called after its transaction committed). */
export function reportOutcome(metrics: WorkerMetrics, log: Logger, outcome: RecordOutcome, priority: Priority = 'normal'): void {
  countOutcome(metrics, outcome, priority);
  logOutcome(log, outcome);
}

function countOutcome(metrics: WorkerMetrics, outcome: RecordOutcome, priority: Priority): void {
  if (outcome.kind === 'dead-letter') {
    metrics.deadLettered.inc({ reason: outcome.record.error.code });
    return;
  }
  if (outcome.kind === 'duplicate') {
    // A result found in the result topic is no repeated command (counted as in doubt, `published`).
    if (outcome.published !== true) metrics.duplicateCommands.inc();
    return;
  }
  if (outcome.kind !== 'result') return;
  const { result } = outcome;
  metrics.results.inc({
    operation: result.operation,
    outcome: result.outcome,
    code: result.error === null ? '' : metrics.label.code(result.error.code),
    priority,
  });
  for (const message of result.messages) {
    const labels = {
      account: result.account ?? DEFAULT_ACCOUNT,
      region: metrics.label.region(message.regionCode),
      upstream: metrics.label.upstream(message.upstream),
    };
    metrics.billedMessages.inc(labels, message.messageCount);
    metrics.countCharge(labels, message.price);
  }
}

/** One line per committed outcome: debug for the expected ones, warn for failures, unknowns and dead letters. */
function logOutcome(log: Logger, outcome: RecordOutcome): void {
  if (outcome.kind === 'dead-letter') {
    const { source, error } = outcome.record;
    log.warn({ partition: source.partition, offset: source.offset, code: error.code }, `dead-lettered: ${error.message}`);
    return;
  }
  if (outcome.kind === 'duplicate' && outcome.published === true) {
    log.info(
      { commandId: outcome.commandId, offset: outcome.firstOffset.toString() },
      'command in doubt already has its result in the result topic (an earlier owner’s transaction committed): not published again',
    );
    return;
  }
  if (outcome.kind === 'duplicate') {
    log.info(
      { commandId: outcome.commandId, firstOffset: outcome.firstOffset.toString() },
      'repeated command record skipped: its commandId already has a result on this partition',
    );
    return;
  }
  if (outcome.kind !== 'result') return;
  const { result } = outcome;
  const fields = {
    commandId: result.commandId,
    partition: result.source.partition,
    offset: result.source.offset,
    outcome: result.outcome,
    attempts: result.attempts,
  };
  if (result.outcome === 'FAILED' || result.outcome === 'UNKNOWN')
    log.warn(
      { ...fields, code: result.error?.code, retryable: result.error?.retryable },
      `command ${result.outcome === 'FAILED' ? 'failed' : 'outcome unknown'}: ${result.error?.message ?? ''}`,
    );
  else log.debug({ ...fields, ...(result.error !== null && { code: result.error.code }) }, 'result committed');
}
