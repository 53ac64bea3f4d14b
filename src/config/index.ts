import { readFileSync } from 'node:fs';
import type { CountryCode } from 'libphonenumber-js';
import { ConfigError } from '../errors.ts';
import { envSchema, SECRET_VARIABLES, type Env } from './schema.ts';

export { envSchema, SECRET_VARIABLES } from './schema.ts';

export interface KafkaSettings {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly ssl: false | { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly rejectUnauthorized: boolean };
  readonly sasl: undefined | { readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; readonly username: string; readonly password: string };
}

export interface WorkerConfig {
  readonly kafka: KafkaSettings;
  readonly registry: { readonly url: string; readonly auth?: { readonly username: string; readonly password: string } };
  readonly topics: { readonly commands: string; readonly results: string; readonly deadLetter: string; readonly create: boolean; readonly partitions: number; readonly replicationFactor: number };
  readonly consumerGroup: string;
  /** How long the group waits for a silent member (e.g. a killed pod) before reassigning its partitions. */
  readonly sessionTimeoutMs: number;
  /** Fetch sizes: smaller batches measured faster and leaner than kafkajs's 1 MB / 10 MB defaults (bench/README.md). */
  readonly fetch: { readonly maxBytesPerPartition: number; readonly maxBytes: number };
  readonly transactionalIdPrefix: string;
  readonly provider: {
    readonly baseUrl: string;
    readonly accessKeyId: string;
    readonly accessKeySecret: string | undefined;
    readonly connectTimeoutMs: number;
    readonly responseTimeoutMs: number;
    /** Answers larger than this are not read to the end: malformed, not retried. */
    readonly maxResponseBytes: number;
    readonly retry: { readonly maxAttempts: number; readonly budgetMs: number; readonly baseDelayMs: number; readonly maxDelayMs: number; readonly retryAmbiguous: boolean };
  };
  readonly maxInFlight: number;
  readonly rateLimitPerSecond: number;
  readonly commitIntervalMs: number;
  readonly validation: { readonly homeRegion: CountryCode; readonly maxRecipients: number; readonly partialRecipients: 'reject' | 'send-valid' };
  readonly funds: { readonly policy: 'pause' | 'fail'; readonly probeInitialMs: number; readonly probeMaxMs: number };
  readonly breaker: { readonly failureThreshold: number; readonly probeInitialMs: number; readonly probeMaxMs: number };
  readonly shutdownTimeoutMs: number;
  readonly healthStallMs: number;
  readonly httpPort: number;
  readonly logLevel: Env['LOG_LEVEL'];
}

function readFile(path: string | undefined, variable: string, problems: string[]): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    problems.push(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
}

/**
 * Parses and validates the environment once, at start-up. Throws a ConfigError listing every
 * problem (never only the first); messages name the variable but never echo a secret's value.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const parsed = envSchema.safeParse(env);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const variable = issue.path.join('.');
      const secret = (SECRET_VARIABLES as readonly string[]).includes(variable);
      problems.push(`${variable}: ${secret ? 'is required' : issue.message}`);
    }
    throw new ConfigError(problems);
  }
  const e = parsed.data;
  if (e.KAFKA_SASL_MECHANISM !== 'none' && (e.KAFKA_SASL_USERNAME === undefined || e.KAFKA_SASL_PASSWORD === undefined)) {
    problems.push(`KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD: both are required when KAFKA_SASL_MECHANISM is ${e.KAFKA_SASL_MECHANISM}`);
  }
  if ((e.SCHEMA_REGISTRY_USERNAME === undefined) !== (e.SCHEMA_REGISTRY_PASSWORD === undefined)) {
    problems.push('SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD: give both or neither');
  }
  if (e.PROVIDER_RETRY_MAX_DELAY_MS < e.PROVIDER_RETRY_BASE_MS) problems.push('PROVIDER_RETRY_MAX_DELAY_MS: must be at least PROVIDER_RETRY_BASE_MS');
  if (e.FUNDS_PROBE_MAX_MS < e.FUNDS_PROBE_INITIAL_MS) problems.push('FUNDS_PROBE_MAX_MS: must be at least FUNDS_PROBE_INITIAL_MS');
  if (e.BREAKER_PROBE_MAX_MS < e.BREAKER_PROBE_INITIAL_MS) problems.push('BREAKER_PROBE_MAX_MS: must be at least BREAKER_PROBE_INITIAL_MS');
  if (new Set([e.COMMAND_TOPIC, e.RESULT_TOPIC, e.DEAD_LETTER_TOPIC]).size !== 3) problems.push('COMMAND_TOPIC, RESULT_TOPIC, DEAD_LETTER_TOPIC: must be three different topics');
  const ca = readFile(e.KAFKA_SSL_CA_FILE, 'KAFKA_SSL_CA_FILE', problems);
  const cert = readFile(e.KAFKA_SSL_CERT_FILE, 'KAFKA_SSL_CERT_FILE', problems);
  const key = readFile(e.KAFKA_SSL_KEY_FILE, 'KAFKA_SSL_KEY_FILE', problems);
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    kafka: {
      brokers: e.KAFKA_BROKERS,
      clientId: e.KAFKA_CLIENT_ID,
      ssl: e.KAFKA_SSL ? { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }), rejectUnauthorized: e.KAFKA_SSL_REJECT_UNAUTHORIZED } : false,
      sasl:
        e.KAFKA_SASL_MECHANISM === 'none'
          ? undefined
          : { mechanism: e.KAFKA_SASL_MECHANISM, username: e.KAFKA_SASL_USERNAME ?? '', password: e.KAFKA_SASL_PASSWORD ?? '' },
    },
    registry: {
      url: e.SCHEMA_REGISTRY_URL.replace(/\/+$/, ''),
      ...(e.SCHEMA_REGISTRY_USERNAME !== undefined && e.SCHEMA_REGISTRY_PASSWORD !== undefined && { auth: { username: e.SCHEMA_REGISTRY_USERNAME, password: e.SCHEMA_REGISTRY_PASSWORD } }),
    },
    topics: { commands: e.COMMAND_TOPIC, results: e.RESULT_TOPIC, deadLetter: e.DEAD_LETTER_TOPIC, create: e.TOPICS_CREATE, partitions: e.TOPICS_PARTITIONS, replicationFactor: e.TOPICS_REPLICATION_FACTOR },
    consumerGroup: e.CONSUMER_GROUP,
    sessionTimeoutMs: e.KAFKA_SESSION_TIMEOUT_MS,
    fetch: { maxBytesPerPartition: e.KAFKA_FETCH_MAX_BYTES_PER_PARTITION, maxBytes: e.KAFKA_FETCH_MAX_BYTES },
    transactionalIdPrefix: e.TRANSACTIONAL_ID_PREFIX,
    provider: {
      baseUrl: e.PROVIDER_BASE_URL.replace(/\/+$/, ''),
      accessKeyId: e.PROVIDER_ACCESS_KEY_ID,
      accessKeySecret: e.PROVIDER_ACCESS_KEY_SECRET,
      connectTimeoutMs: e.PROVIDER_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: e.PROVIDER_RESPONSE_TIMEOUT_MS,
      maxResponseBytes: e.PROVIDER_MAX_RESPONSE_BYTES,
      retry: {
        maxAttempts: e.PROVIDER_RETRY_ATTEMPTS,
        budgetMs: e.PROVIDER_RETRY_BUDGET_MS,
        baseDelayMs: e.PROVIDER_RETRY_BASE_MS,
        maxDelayMs: e.PROVIDER_RETRY_MAX_DELAY_MS,
        retryAmbiguous: e.PROVIDER_RETRY_AMBIGUOUS,
      },
    },
    maxInFlight: e.MAX_IN_FLIGHT,
    rateLimitPerSecond: e.RATE_LIMIT_PER_SECOND,
    commitIntervalMs: e.COMMIT_INTERVAL_MS,
    validation: { homeRegion: e.HOME_REGION as CountryCode, maxRecipients: e.MAX_RECIPIENTS, partialRecipients: e.PARTIAL_RECIPIENTS },
    funds: { policy: e.FUNDS_POLICY, probeInitialMs: e.FUNDS_PROBE_INITIAL_MS, probeMaxMs: e.FUNDS_PROBE_MAX_MS },
    breaker: { failureThreshold: e.BREAKER_FAILURE_THRESHOLD, probeInitialMs: e.BREAKER_PROBE_INITIAL_MS, probeMaxMs: e.BREAKER_PROBE_MAX_MS },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    healthStallMs: e.HEALTH_STALL_MS,
    httpPort: e.HTTP_PORT,
    logLevel: e.LOG_LEVEL,
  };
}

/** The configuration as it may be logged: secrets replaced by whether they are set. */
export function describeConfig(config: WorkerConfig): Record<string, unknown> {
  return {
    ...config,
    kafka: { ...config.kafka, ssl: config.kafka.ssl === false ? false : { rejectUnauthorized: config.kafka.ssl.rejectUnauthorized }, sasl: config.kafka.sasl === undefined ? undefined : { mechanism: config.kafka.sasl.mechanism, username: config.kafka.sasl.username, password: '[redacted]' } },
    registry: { url: config.registry.url, auth: config.registry.auth === undefined ? undefined : { username: config.registry.auth.username, password: '[redacted]' } },
    provider: { ...config.provider, accessKeyId: '[redacted]', accessKeySecret: config.provider.accessKeySecret === undefined ? undefined : '[redacted]' },
  };
}
