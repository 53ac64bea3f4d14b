/**
 * Configuration of the receiver (`sms-worker receipts`), parsed and validated once at start-up:
 * the worker's Kafka/registry connection variables (same names, same TLS/SASL handling) plus the
 * RECEIPTS_* variables below. Throws one ConfigError listing every problem; never echoes a secret.
 */
import { z } from 'zod';
import { CONNECTION_SECRET_VARIABLES, connectionSchema, connectionSettings, type KafkaSettings, type RegistrySettings } from '../config/connection.ts';
import { withSecretFiles } from '../config/secret-files.ts';
import { envSchema, SECRET_VARIABLES } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import type { ReceiverCredentials } from './auth.ts';

const int = (fallback: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(fallback);
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

/** The receiver's own variables; the configuration table of docs/receipts.md lists exactly these. */
export const receiptsEnvSchema = z.object({
  RECEIPTS_TOPIC: z
    .string()
    .regex(/^[a-zA-Z0-9._-]{1,249}$/, 'a Kafka topic name: letters, digits, . _ - (1–249)')
    .default('sms.receipts'),
  RECEIPTS_HOST: z.string().min(1).default('0.0.0.0'),
  RECEIPTS_PORT: int(8080, 0, 65_535),
  RECEIPTS_PATH: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'a URL path such as /receipts (no trailing slash)')
    .default('/receipts'),
  RECEIPTS_PATH_TOKEN: optionalText.refine((v) => v === undefined || /^[A-Za-z0-9_-]{16,256}$/.test(v), 'must be 16–256 characters of A–Z a–z 0–9 _ -'),
  RECEIPTS_BASIC_USERNAME: optionalText.refine((v) => v === undefined || (v.length <= 256 && !v.includes(':')), 'must be at most 256 characters, without ":"'),
  RECEIPTS_BASIC_PASSWORD: optionalText.refine((v) => v === undefined || (v.length >= 16 && v.length <= 256), 'must be 16–256 characters'),
  RECEIPTS_MAX_BODY_BYTES: int(1_048_576, 1_024, 16 * 1_048_576),
  RECEIPTS_MAX_REPORTS: int(1_000, 1, 10_000),
  RECEIPTS_PUBLISH_TIMEOUT_MS: int(10_000, 100, 120_000),
  RECEIPTS_RATE_LIMIT_PER_SECOND: z.coerce.number().positive().max(1_000_000).default(50),
  RECEIPTS_RATE_LIMIT_BURST: int(200, 1, 1_000_000),
  RECEIPTS_RATE_LIMIT_SOURCES: int(10_000, 1, 1_000_000),
  RECEIPTS_TRUSTED_PROXY_HOPS: int(0, 0, 10),
  RECEIPTS_HTTP_PORT: int(9465, 0, 65_535),
  RECEIPTS_SHUTDOWN_TIMEOUT_MS: int(10_000, 1, 300_000),
});

/** Receiver variables whose values are never printed, logged or put in a ConfigMap. */
export const RECEIPTS_SECRET_VARIABLES = ['RECEIPTS_PATH_TOKEN', 'RECEIPTS_BASIC_PASSWORD'] as const;

const fullSchema = connectionSchema.extend(receiptsEnvSchema.shape).extend({ LOG_LEVEL: envSchema.shape.LOG_LEVEL });

export interface ReceiverConfig {
  readonly kafka: KafkaSettings;
  readonly registry: RegistrySettings;
  readonly topic: string;
  readonly host: string;
  readonly port: number;
  /** Base path of the report route, without a trailing slash. */
  readonly path: string;
  readonly credentials: ReceiverCredentials;
  readonly maxBodyBytes: number;
  readonly maxReports: number;
  /** A publish not acknowledged within this is answered 503 (the service retries). */
  readonly publishTimeoutMs: number;
  readonly rateLimit: { readonly perSecond: number; readonly burst: number; readonly maxSources: number };
  readonly trustedProxyHops: number;
  /** Port of /metrics, /healthz, /readyz: apart from the report port, so an Ingress never exposes them. */
  readonly httpPort: number;
  readonly shutdownTimeoutMs: number;
  readonly logLevel: z.output<typeof envSchema.shape.LOG_LEVEL>;
}

const SECRETS: readonly string[] = [...SECRET_VARIABLES, ...RECEIPTS_SECRET_VARIABLES];

export function loadReceiverConfig(given: NodeJS.ProcessEnv = process.env): ReceiverConfig {
  const problems: string[] = [];
  // Each secret may come from a file (`<NAME>_FILE`) instead: read before anything checks it.
  const env = withSecretFiles(given, [...CONNECTION_SECRET_VARIABLES, ...RECEIPTS_SECRET_VARIABLES], problems);
  const parsed = fullSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError([
      ...parsed.error.issues.map((issue) => {
        const variable = issue.path.join('.');
        // A secret's rule may be named, never its value (zod messages here do not echo values).
        return `${variable}: ${SECRETS.includes(variable) && issue.code === 'invalid_type' ? 'is required' : issue.message}`;
      }),
      ...problems,
    ]);
  }
  const e = parsed.data;
  const connection = connectionSettings(e, problems);
  const hasUser = e.RECEIPTS_BASIC_USERNAME !== undefined;
  const hasPassword = e.RECEIPTS_BASIC_PASSWORD !== undefined;
  if (hasUser !== hasPassword) problems.push('RECEIPTS_BASIC_USERNAME and RECEIPTS_BASIC_PASSWORD: give both or neither');
  if (e.RECEIPTS_PATH_TOKEN === undefined && !(hasUser && hasPassword)) {
    problems.push(
      'RECEIPTS_PATH_TOKEN or RECEIPTS_BASIC_USERNAME/RECEIPTS_BASIC_PASSWORD: set at least one; the receiver never accepts unauthenticated reports',
    );
  }
  if (e.RECEIPTS_PORT !== 0 && e.RECEIPTS_PORT === e.RECEIPTS_HTTP_PORT)
    problems.push('RECEIPTS_PORT and RECEIPTS_HTTP_PORT: must differ (reports and metrics are served apart)');
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    kafka: connection.kafka,
    registry: connection.registry,
    topic: e.RECEIPTS_TOPIC,
    host: e.RECEIPTS_HOST,
    port: e.RECEIPTS_PORT,
    path: e.RECEIPTS_PATH,
    credentials: {
      pathToken: e.RECEIPTS_PATH_TOKEN,
      basic: hasUser && hasPassword ? { username: e.RECEIPTS_BASIC_USERNAME ?? '', password: e.RECEIPTS_BASIC_PASSWORD ?? '' } : undefined,
    },
    maxBodyBytes: e.RECEIPTS_MAX_BODY_BYTES,
    maxReports: e.RECEIPTS_MAX_REPORTS,
    publishTimeoutMs: e.RECEIPTS_PUBLISH_TIMEOUT_MS,
    rateLimit: { perSecond: e.RECEIPTS_RATE_LIMIT_PER_SECOND, burst: e.RECEIPTS_RATE_LIMIT_BURST, maxSources: e.RECEIPTS_RATE_LIMIT_SOURCES },
    trustedProxyHops: e.RECEIPTS_TRUSTED_PROXY_HOPS,
    httpPort: e.RECEIPTS_HTTP_PORT,
    shutdownTimeoutMs: e.RECEIPTS_SHUTDOWN_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
  };
}
