import { parseArgs } from 'node:util';
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
