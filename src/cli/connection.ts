import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../errors.ts';

/**
 * What produce/tail need: where Kafka and the registry are, and the topic. Flags win over the
 * same environment variables the worker reads, so the commands work inside a worker's pod.
 */
export interface Connection {
  readonly brokers: string[];
  readonly registryUrl: string;
  readonly topic: string;
}

export const CONNECTION_FLAGS = {
  brokers: { type: 'string' },
  registry: { type: 'string' },
  topic: { type: 'string' },
} as const;

export function connectionFrom(values: { brokers?: string | undefined; registry?: string | undefined; topic?: string | undefined }, topicVariable: 'COMMAND_TOPIC' | 'RESULT_TOPIC', env: NodeJS.ProcessEnv = process.env): Connection {
  const problems: string[] = [];
  const brokers = (values.brokers ?? env['KAFKA_BROKERS'] ?? '').split(',').map((b) => b.trim()).filter((b) => b !== '');
  const registryUrl = values.registry ?? env['SCHEMA_REGISTRY_URL'] ?? '';
  const topic = values.topic ?? env[topicVariable] ?? (topicVariable === 'COMMAND_TOPIC' ? 'sms.commands' : 'sms.results');
  if (brokers.length === 0) problems.push('Kafka brokers: pass --brokers host:port or set KAFKA_BROKERS');
  if (registryUrl === '') problems.push('schema registry: pass --registry URL or set SCHEMA_REGISTRY_URL');
  if (problems.length > 0) throw new ConfigError(problems);
  return { brokers, registryUrl: registryUrl.replace(/\/+$/, ''), topic };
}

export { parseArgs };

/** Ends a subcommand early with an exit code (usage error, --help); cli/main.ts turns it into the exit status. */
export class CliExit extends Error {
  readonly code: number;
  constructor(code: number) {
    super(`exit ${code}`);
    this.code = code;
  }
}

export const HELP_FLAG = { help: { type: 'boolean', short: 'h' } } as const;

/** parseArgs, printing the help for --help (exit 0) and the error plus help for bad flags (exit 2). */
export function parseCommandArgs<T extends ParseArgsConfig>(config: T, help: string): ReturnType<typeof parseArgs<T>> {
  let parsed: ReturnType<typeof parseArgs<T>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n\n${help}`);
    throw new CliExit(2);
  }
  if ((parsed.values as Record<string, unknown>)['help'] === true) {
    console.log(help);
    throw new CliExit(0);
  }
  return parsed;
}

/** connectionFrom, reporting missing settings as a usage error (exit 2). */
export function requireConnection(values: Parameters<typeof connectionFrom>[0], topicVariable: 'COMMAND_TOPIC' | 'RESULT_TOPIC'): Connection {
  try {
    return connectionFrom(values, topicVariable);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    throw new CliExit(2);
  }
}
