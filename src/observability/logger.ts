import { pino, type DestinationStream, type Logger } from 'pino';
import { logTraceFields } from './log-trace.ts';

/**
 * Structured JSON logs. Secrets are never passed to the logger in the first place; these redact
 * paths are a second line of defence for objects that might carry them. A line written while a
 * traced command is processed carries its `trace_id` and `span_id` (log-trace.ts), so it joins the
 * command's trace. `destination`: standard output unless given (tests).
 */
export function createLogger(level: string, base: Record<string, unknown> = {}, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'sms-worker', ...base },
    mixin: logTraceFields,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'accessKeyId',
        'accessKeySecret',
        'password',
        '*.accessKeyId',
        '*.accessKeySecret',
        '*.password',
        'sasl.password',
        'config.provider.accessKeyId',
        'config.provider.accessKeySecret',
      ],
      censor: '[redacted]',
    },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

export type { Logger };
