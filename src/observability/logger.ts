import { pino, type Logger } from 'pino';

/**
 * Structured JSON logs. Secrets are never passed to the logger in the first place; these redact
 * paths are a second line of defence for objects that might carry them.
 */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'sms-worker', ...base },
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
  });
}

export type { Logger };
