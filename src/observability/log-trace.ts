import { AsyncLocalStorage } from 'node:async_hooks';

/** The trace of the command being processed, in OpenTelemetry's log correlation fields. */
export interface LogTrace {
  readonly trace_id: string;
  readonly span_id: string;
}

const current = new AsyncLocalStorage<LogTrace>();

/**
 * Runs `work` as the processing of one traced command: every log line written meanwhile, in any
 * function it calls or awaits, carries `trace_id` and `span_id` (the logger's mixin). Without
 * tracing (`ids` undefined) it runs as it is and lines carry neither.
 */
export function withLogTrace<T>(ids: LogTrace | undefined, work: () => T): T {
  return ids === undefined ? work() : current.run(ids, work);
}

/** The fields for a log line written now: the command's trace, or none. */
export function logTraceFields(): LogTrace | Record<string, never> {
  return current.getStore() ?? {};
}
