/**
 * sms-worker as shipped: the CLI (`node src/cli/main.ts run`) in its own process, configured only
 * by environment. Default settings except what a deployment must set anyway (topics, group,
 * transactional-id prefix, addresses), LOG_LEVEL=warn and HTTP_PORT=0 (a free port).
 */
import { CLI_MAIN, startNode, type Child } from '../lib/proc.ts';

export interface WorkerTarget {
  readonly brokers: string;
  readonly registryUrl: string;
  readonly providerUrl: string;
  readonly commands: string;
  readonly results: string;
  readonly deadLetter: string;
  readonly group: string;
}

export function workerEnv(target: WorkerTarget, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    KAFKA_BROKERS: target.brokers,
    SCHEMA_REGISTRY_URL: target.registryUrl,
    PROVIDER_BASE_URL: target.providerUrl,
    PROVIDER_ACCESS_KEY_ID: 'bench-access-key',
    COMMAND_TOPIC: target.commands,
    RESULT_TOPIC: target.results,
    DEAD_LETTER_TOPIC: target.deadLetter,
    LEDGER_TOPIC: `${target.commands}.ledger`,
    CONSUMER_GROUP: target.group,
    TRANSACTIONAL_ID_PREFIX: `${target.group}-tx`,
    TOPICS_CREATE: 'true',
    TOPICS_REPLICATION_FACTOR: '1',
    HTTP_PORT: '0',
    LOG_LEVEL: 'warn',
    ...overrides,
  };
}

export function startWorker(env: Record<string, string>): Child {
  return startNode(CLI_MAIN, ['run'], env);
}
