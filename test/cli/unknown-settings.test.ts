import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { warnUnknownSettings } from '../../src/cli/unknown-settings.ts';

function logged(env: NodeJS.ProcessEnv): { level: number; msg: string; variable: string; didYouMean?: string }[] {
  const lines: { level: number; msg: string; variable: string; didYouMean?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  warnUnknownSettings(env, logger, 'worker');
  return lines;
}

describe('warnUnknownSettings at start-up', () => {
  it('warns once per variable that looks like ours, with the setting it resembles, and never logs a value', () => {
    const lines = logged({ KAFKA_BROKER: 'broker:9092', SMS_WORKER_TOKEN: 'SECRET-VALUE', RECEIPTS_PATH_TOKEN_FILE: '/run/secrets/t', PATH: '/bin' });
    expect(lines.map(({ level, variable, didYouMean }) => ({ level, variable, didYouMean }))).toEqual([
      { level: 40, variable: 'KAFKA_BROKER', didYouMean: 'KAFKA_BROKERS' },
      { level: 40, variable: 'SMS_WORKER_TOKEN', didYouMean: undefined },
    ]);
    expect(lines[0]?.msg).toBe('KAFKA_BROKER is not a setting of the worker and is ignored; did you mean KAFKA_BROKERS?');
    expect(JSON.stringify(lines)).not.toContain('SECRET-VALUE');
  });
});
