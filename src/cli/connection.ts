import { parseArgs, type ParseArgsConfig } from 'node:util';
import { loadConnectionConfig, type KafkaSettings, type RegistrySettings } from '../config/index.ts';
import { ConfigError } from '../errors.ts';

/**
 * What produce/tail need: how to reach Kafka and the registry, and the topic. The settings come
 * from the same environment variables as the worker's (TLS, SASL, registry credentials included),
 * so the commands work inside a worker's pod; --brokers, --registry and --topic win over them.
 */
export interface Connection {
  readonly kafka: KafkaSettings;
  readonly registry: RegistrySettings;
  readonly topic: string;
}

export const CONNECTION_FLAGS = {
  brokers: { type: 'string' },
  registry: { type: 'string' },
  topic: { type: 'string' },
} as const;

export function connectionFrom(
  values: { brokers?: string | undefined; registry?: string | undefined; topic?: string | undefined },
  topicVariable: 'COMMAND_TOPIC' | 'RESULT_TOPIC',
  env: NodeJS.ProcessEnv = process.env,
): Connection {
  const merged: NodeJS.ProcessEnv = {
    ...env,
    ...(values.brokers !== undefined && { KAFKA_BROKERS: values.brokers }),
    ...(values.registry !== undefined && { SCHEMA_REGISTRY_URL: values.registry }),
  };
  let settings;
  try {
    settings = loadConnectionConfig(merged);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // Name the flags too: on a laptop they are the usual way to say where Kafka is.
    throw new ConfigError(
      error.problems.map((p) =>
        p.replace(/^KAFKA_BROKERS:/, 'KAFKA_BROKERS (or --brokers):').replace(/^SCHEMA_REGISTRY_URL:/, 'SCHEMA_REGISTRY_URL (or --registry):'),
      ),
    );
  }
  const topic = values.topic ?? env[topicVariable] ?? (topicVariable === 'COMMAND_TOPIC' ? 'sms.commands' : 'sms.results');
  return { ...settings, topic };
}

export { parseArgs };

/** Ends a subcommand early with an exit code (usage error, --help); cli/commands.ts turns it into the exit status. */
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

/** connectionFrom, reporting missing or invalid settings as a usage error (exit 2). */
export function requireConnection(values: Parameters<typeof connectionFrom>[0], topicVariable: 'COMMAND_TOPIC' | 'RESULT_TOPIC'): Connection {
  try {
    return connectionFrom(values, topicVariable);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    throw new CliExit(2);
  }
}
