import { isIPv6 } from 'node:net';
import { z } from 'zod';
import { GEO_MODES, KNOWN_REGIONS, MAX_GEO_REGIONS } from '../contracts/geo.ts';
import { DEFAULT_VELOCITY_SETTINGS, MAX_PREFIX_DIGITS, MAX_VELOCITY_LIMIT, VELOCITY_MODES } from '../worker/guard/velocity.ts';
import { DEFAULT_SPEND_CAP_SETTINGS, MAX_SPEND_CAP, spendCapMicros } from '../worker/guard/spend-cap.ts';

/**
 * Every environment variable the worker reads, with its default. This table is the single source
 * for validation, the configuration table of docs/configuration.md and the Helm chart's ConfigMap.
 */
const bool = (fallback: boolean) => z.stringbool({ truthy: ['true', '1', 'yes', 'on'], falsy: ['false', '0', 'no', 'off'] }).default(fallback);
const int = (fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).default(fallback);
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));
/**
 * Defaults of the messaging-service client. The client's own options (src/provider/options.ts)
 * read them from here, so the worker, a library user of the client and docs/configuration.md cannot drift.
 */
export const PROVIDER_DEFAULTS = {
  connectTimeoutMs: 2_000,
  responseTimeoutMs: 10_000,
  retryAttempts: 4,
  retryBudgetMs: 30_000,
  retryBaseMs: 250,
  retryMaxDelayMs: 5_000,
  retryAmbiguous: false,
  /**
   * Largest answer body read. A success for 1,000 recipients (MAX_RECIPIENTS' default) is
   * ≈ 200 KB (≈ 200 bytes per report); 1 MiB leaves a five-fold margin.
   */
  maxResponseBytes: 1_048_576,
  /** Sockets per origin when not sized by the worker (which uses MAX_IN_FLIGHT). */
  maxSockets: 64,
  /**
   * An idle keep-alive socket is closed after this long, below common server keep-alive timeouts
   * (Node 5 s, nginx 75 s), so a request rarely meets a socket the server is closing (ECONNRESET).
   */
  freeSocketTimeoutMs: 4_000,
} as const;

/**
 * Defaults of how far a refusal reaches (src/worker/send/refusal-scopes.ts), the one source for the
 * ROUTE_* and FUNDS_PROBE_* variables and for a sender built without a configuration. Why these:
 * - `maxWaitMs` 2 s: a held command keeps its partition's later results (not its sends) waiting,
 *   and the partition runs at most MAX_RUN_AHEAD (128) records ahead, which at 25 commands/s a
 *   partition is 5 s; 2 s lets a route that comes back within a probe or two carry on, and keeps
 *   the other commands flowing. 101301 is a configuration of the service: it rarely clears in seconds.
 * - route probes from 1 s to 60 s: the refused command itself is the first probe, so it ends
 *   (FAILED or SENT) about 1 s after its refusal; afterwards about one request a minute per route.
 * - three distinct routes with nothing sent in between: one region without an upstream is
 *   ordinary, three at once with no success at all is the account.
 */
/**
 * MARK_LINGER_MS of the bulk topic (COMMAND_TOPIC beside a priority topic): nobody waits for one
 * bulk command, and its marks are most of the process's transactions, which the codes share the
 * machine with (bench/README.md, "Bulk marks share transactions").
 */
export const BULK_MARK_LINGER_MS = 100;

export const REFUSAL_DEFAULTS = {
  maxWaitMs: 2_000,
  routeProbe: { initialMs: 1_000, maxMs: 60_000 },
  fundsProbe: { initialMs: 5_000, maxMs: 300_000 },
  accountWideAfterRoutes: 3,
  escalationWindowMs: 60_000,
  maxPausedRoutes: 64,
} as const;

/** Unknown codes a problem names, at most; each cut to a few characters (a list may hold anything). */
const SHOWN_UNKNOWN_REGIONS = 20;
/**
 * A comma-separated list of destination regions (GEO_*_REGIONS): ISO 3166-1 alpha-2 codes of
 * regions that have phone numbers (libphonenumber's), or `001` for non-geographic numbers; case
 * and spaces do not matter. Unset or blank: no list. At most MAX_GEO_REGIONS entries, as given.
 * Parsed to the sorted, distinct codes.
 */
const regionList = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value.trim() === '') return undefined;
    const entries = value
      .split(',')
      .map((entry) => entry.trim().toUpperCase())
      .filter((entry) => entry !== '');
    if (entries.length > MAX_GEO_REGIONS) {
      ctx.issues.push({ code: 'custom', input: value, message: `at most ${MAX_GEO_REGIONS} region codes are allowed; got ${entries.length}` });
      return z.NEVER;
    }
    const unknown = [...new Set(entries.filter((entry) => !KNOWN_REGIONS.has(entry)))];
    if (unknown.length > 0) {
      const shown = unknown.slice(0, SHOWN_UNKNOWN_REGIONS).map((code) => (code.length > 8 ? `${code.slice(0, 8)}…` : code));
      const more = unknown.length > shown.length ? ` and ${unknown.length - shown.length} more` : '';
      ctx.issues.push({
        code: 'custom',
        input: value,
        message: `unknown region code${unknown.length === 1 ? '' : 's'} ${shown.join(', ')}${more}: expected a comma-separated list of ISO 3166-1 alpha-2 codes of regions with phone numbers (e.g. CN,HK,US), or 001 for non-geographic numbers`,
      });
      return z.NEVER;
    }
    return [...new Set(entries)].sort();
  });

/**
 * A spend cap (SPEND_CAP_*): a positive decimal string of the account currency with at most six
 * fractional digits (the service's precision), at most MAX_SPEND_CAP. Unset or blank: no cap.
 * Kept as the string: amounts are never floats.
 */
const spendCap = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value.trim() === '') return undefined;
    const text = value.trim();
    if (spendCapMicros(text) === undefined) {
      ctx.issues.push({
        code: 'custom',
        input: value,
        message: `must be a positive decimal amount of at most ${MAX_SPEND_CAP} with at most six fractional digits (e.g. 25 or 12.5)`,
      });
      return z.NEVER;
    }
    return text;
  });

/** `host:port`, the host a name or an IPv4 address, or an IPv6 address in brackets (`[::1]:9092`). */
export function isBrokerAddress(address: string): boolean {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(address);
  if (match === null) return false;
  const port = Number(match[3]);
  return port >= 1 && port <= 65_535 && (match[1] === undefined || isIPv6(match[1]));
}

const topicName = (fallback: string) =>
  z
    .string()
    .regex(/^[a-zA-Z0-9._-]{1,249}$/, 'a Kafka topic name: letters, digits, . _ - (1–249)')
    .default(fallback);

export const envSchema = z.object({
  KAFKA_BROKERS: z
    .string({ error: 'is required (comma-separated host:port list)' })
    .min(1, 'is required (comma-separated host:port list)')
    .transform((v) =>
      v
        .split(',')
        .map((b) => b.trim())
        .filter((b) => b !== ''),
    )
    .refine(
      (list) => list.length > 0 && list.every(isBrokerAddress),
      'must be a comma-separated list of host:port (an IPv6 address in brackets: [::1]:9092; ports 1–65535)',
    ),
  KAFKA_CLIENT_ID: z.string().min(1).default('sms-worker'),
  KAFKA_SSL: bool(false),
  KAFKA_SSL_CA_FILE: optionalText,
  KAFKA_SSL_CERT_FILE: optionalText,
  KAFKA_SSL_KEY_FILE: optionalText,
  KAFKA_SSL_REJECT_UNAUTHORIZED: bool(true),
  // Kafka's own spelling (PLAIN, SCRAM-SHA-512) or kafkajs's (plain, scram-sha-512): case does not matter.
  KAFKA_SASL_MECHANISM: z.preprocess(
    (v) => (typeof v === 'string' ? v.trim().toLowerCase() : v),
    z.enum(['none', 'plain', 'scram-sha-256', 'scram-sha-512'], { error: 'must be PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or none (any case)' }).default('none'),
  ),
  KAFKA_SASL_USERNAME: optionalText,
  KAFKA_SASL_PASSWORD: optionalText,
  SCHEMA_REGISTRY_URL: z.url({ error: 'is required: the registry base URL (for Apicurio: …/apis/ccompat/v7)' }),
  SCHEMA_REGISTRY_USERNAME: optionalText,
  SCHEMA_REGISTRY_PASSWORD: optionalText,
  COMMAND_TOPIC: topicName('sms.commands'),
  RESULT_TOPIC: topicName('sms.results'),
  DEAD_LETTER_TOPIC: topicName('sms.commands.dlq'),
  LEDGER_TOPIC: topicName('sms.commands.ledger'),
  /** The high-priority command topic (verification codes), consumed beside COMMAND_TOPIC; empty: one priority. */
  PRIORITY_COMMAND_TOPIC: optionalText.refine(
    (v) => v === undefined || /^[a-zA-Z0-9._-]{1,249}$/.test(v),
    'a Kafka topic name: letters, digits, . _ - (1–249), or empty for none',
  ),
  /** The priority topic's consumer group; unset: CONSUMER_GROUP + "-priority". */
  PRIORITY_CONSUMER_GROUP: optionalText,
  /** The priority topic's own intent ledger; unset: PRIORITY_COMMAND_TOPIC + ".ledger". */
  PRIORITY_LEDGER_TOPIC: optionalText.refine(
    (v) => v === undefined || /^[a-zA-Z0-9._-]{1,249}$/.test(v),
    'a Kafka topic name: letters, digits, . _ - (1–249), or empty for the default',
  ),
  /**
   * How long a busy partition of COMMAND_TOPIC holds a ledger mark, after its last transaction, so
   * the marks behind it share one transaction; unset: BULK_MARK_LINGER_MS with a priority topic
   * (COMMAND_TOPIC is then the bulk one), 0 without. The priority topic's marks never wait.
   */
  MARK_LINGER_MS: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v))
    .pipe(z.coerce.number<string | undefined>().int().min(0).max(1_000).optional()),
  /** Under contention the normal topic still gets this share of in-flight slots, mark permits and rate-limit tokens. */
  PRIORITY_NORMAL_MIN_SHARE: z.coerce.number().min(0).max(0.5).default(0.1),
  LEDGER_ENABLED: bool(true),
  IN_DOUBT_POLICY: z.enum(['report', 'resend']).default('report'),
  MAX_RUN_AHEAD: int(128, 1, 100_000),
  DEDUP_WINDOW: int(2_000, 0, 1_000_000),
  CONSUMER_GROUP: z.string().min(1).default('sms-worker'),
  KAFKA_SESSION_TIMEOUT_MS: int(30_000, 6_000, 300_000),
  KAFKA_FETCH_MAX_BYTES_PER_PARTITION: int(131_072, 1_024, 104_857_600),
  KAFKA_FETCH_MAX_BYTES: int(1_048_576, 1_024, 1_073_741_824),
  TRANSACTIONAL_ID_PREFIX: z.string().min(1).default('sms-worker'),
  TOPICS_CREATE: bool(false),
  TOPICS_PARTITIONS: int(12, 1, 10_000),
  TOPICS_REPLICATION_FACTOR: int(3, 1, 32),
  PROVIDER_BASE_URL: z.url({ error: 'is required: the messaging service base URL' }),
  PROVIDER_ACCESS_KEY_ID: z.string({ error: 'is required (the access key id)' }).min(1, 'is required (the access key id)'),
  PROVIDER_ACCESS_KEY_SECRET: optionalText,
  PROVIDER_CONNECT_TIMEOUT_MS: int(PROVIDER_DEFAULTS.connectTimeoutMs, 1),
  PROVIDER_RESPONSE_TIMEOUT_MS: int(PROVIDER_DEFAULTS.responseTimeoutMs, 1),
  PROVIDER_RETRY_ATTEMPTS: int(PROVIDER_DEFAULTS.retryAttempts, 1, 100),
  PROVIDER_RETRY_BUDGET_MS: int(PROVIDER_DEFAULTS.retryBudgetMs, 0),
  PROVIDER_RETRY_BASE_MS: int(PROVIDER_DEFAULTS.retryBaseMs, 1),
  PROVIDER_RETRY_MAX_DELAY_MS: int(PROVIDER_DEFAULTS.retryMaxDelayMs, 1),
  PROVIDER_RETRY_AMBIGUOUS: bool(PROVIDER_DEFAULTS.retryAmbiguous),
  PROVIDER_MAX_RESPONSE_BYTES: int(PROVIDER_DEFAULTS.maxResponseBytes, 1_024, 104_857_600),
  /** The `default` account's own rate limit, as ACCOUNT_<NAME>_RATE_LIMIT_PER_SECOND (parsed by src/accounts/accounts.ts). */
  PROVIDER_RATE_LIMIT_PER_SECOND: optionalText,
  /** More accounts of the service besides `default` (PROVIDER_*), comma-separated names; each set by ACCOUNT_<NAME>_* (src/accounts/accounts.ts). */
  ACCOUNTS: optionalText,
  /** The accounts a command no ACCOUNT_ROUTES rule matches is tried through, in order; default: `default`, then ACCOUNTS. */
  ACCOUNT_FAILOVER: optionalText,
  /** Rules choosing a command's accounts: a JSON array, first match wins (src/accounts/routing.ts). */
  ACCOUNT_ROUTES: optionalText,
  /** The metadata entry that names a command's tenant (src/worker/tenants/tenant-settings.ts). */
  TENANT_METADATA_KEY: z.string().min(1).max(64).default('tenant'),
  /** Limits per tenant: a JSON object from tenant (or "*") to {spendCapPerHour, spendCapPerDay, ratePerSecond}. */
  TENANT_LIMITS: optionalText,
  MAX_IN_FLIGHT: int(64, 1, 10_000),
  /**
   * Ledger marks kept ahead of the free in-flight slots (src/worker/priority/mark-pacing.ts): `auto`
   * paces them to what the slots need (1 to 2 × MAX_IN_FLIGHT); a number fixes them there, e.g.
   * 2 × MAX_IN_FLIGHT for the most throughput whatever a crash leaves UNKNOWN.
   */
  MARKS_AHEAD: z
    .union([z.literal('auto'), z.coerce.number().int().min(1).max(20_000)], { error: 'must be auto or an integer from 1 to 20000' })
    .default('auto'),
  MAX_BYTES_IN_HAND: int(16_777_216, 1_048_576, 4_294_967_296),
  /** The deployment-wide limit: each process takes its owned partitions' share (src/worker/send/rate-share.ts). */
  RATE_LIMIT_PER_SECOND: z.coerce.number().min(0).default(0),
  COMMIT_INTERVAL_MS: int(100, 1, 60_000),
  HOME_REGION: z
    .string()
    .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 region code such as CN')
    .default('CN'),
  // Limits on one command (docs/contracts.md "Limits"). Each bounds work, billing or what a result echoes.
  MAX_RECIPIENTS: int(1000, 1, 100_000),
  MAX_CONTENT_CHARS: int(500, 1, 100_000),
  // 255: the most parts a concatenated SMS can have (one-byte part count in its header).
  MAX_CONTENT_SEGMENTS: int(8, 1, 255),
  MAX_TEMPLATE_ID_CHARS: int(128, 1, 4_096),
  MAX_TEMPLATE_VARIABLES: int(20, 0, 1_000),
  MAX_TEMPLATE_KEY_CHARS: int(64, 1, 4_096),
  MAX_TEMPLATE_VALUE_CHARS: int(500, 1, 100_000),
  // Upper bounds: the hard caps above which results do not echo metadata (FIXED_LIMITS in src/contracts/limits.ts).
  MAX_METADATA_ENTRIES: int(32, 0, 256),
  MAX_METADATA_BYTES: int(4_096, 0, 65_536),
  // Below the broker's default max.message.bytes (1048588) with room for the dead-letter envelope.
  MAX_COMMAND_BYTES: int(1_000_000, 1_024, 64 * 1_048_576),
  PARTIAL_RECIPIENTS: z.enum(['reject', 'send-valid']).default('reject'),
  // Geo permissions (src/contracts/geo.ts, docs/contracts.md "Geo permissions"): a recipient must pass the
  // lists for every operation and those of its own; no list set = every region, as before.
  GEO_MODE: z.enum(GEO_MODES).default('enforce'),
  GEO_ALLOWED_REGIONS: regionList,
  GEO_DENIED_REGIONS: regionList,
  GEO_TEXT_ALLOWED_REGIONS: regionList,
  GEO_TEXT_DENIED_REGIONS: regionList,
  GEO_VOICE_ALLOWED_REGIONS: regionList,
  GEO_VOICE_DENIED_REGIONS: regionList,
  // Velocity limits per destination (src/worker/guard/velocity.ts, docs/guards.md): recipients per number
  // prefix and per region per minute and per day, deployment-wide; 0 = no limit; none set = off, as before.
  VELOCITY_MODE: z.enum(VELOCITY_MODES).default(DEFAULT_VELOCITY_SETTINGS.mode),
  VELOCITY_PREFIX_DIGITS: int(DEFAULT_VELOCITY_SETTINGS.prefixDigits, 0, MAX_PREFIX_DIGITS),
  VELOCITY_PREFIX_PER_MINUTE: int(0, 0, MAX_VELOCITY_LIMIT),
  VELOCITY_PREFIX_PER_DAY: int(0, 0, MAX_VELOCITY_LIMIT),
  VELOCITY_REGION_PER_MINUTE: int(0, 0, MAX_VELOCITY_LIMIT),
  VELOCITY_REGION_PER_DAY: int(0, 0, MAX_VELOCITY_LIMIT),
  VELOCITY_DYNAMIC_MULTIPLE: z.coerce.number().min(0).max(100).default(DEFAULT_VELOCITY_SETTINGS.dynamicMultiple),
  // Twilio Verify Fraud Guard blocks a prefix for 5 min to 12 h.
  VELOCITY_BLOCK_MS: int(DEFAULT_VELOCITY_SETTINGS.blockMs, 1_000, 43_200_000),
  VELOCITY_MAX_TRACKED_KEYS: int(DEFAULT_VELOCITY_SETTINGS.maxTrackedKeys, 100, 100_000),
  VELOCITY_HOLD_MAX_MS: int(DEFAULT_VELOCITY_SETTINGS.holdMaxMs, 1_000, 3_600_000),
  // Spend caps (src/worker/guard/spend-cap.ts): decimal amounts of the account currency, deployment-wide; unset = none.
  SPEND_CAP_PER_HOUR: spendCap,
  SPEND_CAP_PER_DAY: spendCap,
  SPEND_CAP_HOUR_MS: int(DEFAULT_SPEND_CAP_SETTINGS.hourMs, 1_000, 3_600_000),
  FUNDS_POLICY: z.enum(['pause', 'fail']).default('pause'),
  FUNDS_PROBE_INITIAL_MS: int(REFUSAL_DEFAULTS.fundsProbe.initialMs, 1),
  FUNDS_PROBE_MAX_MS: int(REFUSAL_DEFAULTS.fundsProbe.maxMs, 1),
  // How long a command may wait while the account has no funds (0: until funds return, the promise of FUNDS_POLICY=pause).
  FUNDS_PAUSE_MAX_MS: int(0, 0, 604_800_000),
  // How far a refusal reaches (src/worker/send/refusal-scopes.ts): a route's pause, a command's wait, when it is the account.
  ROUTE_PAUSE_MAX_MS: int(REFUSAL_DEFAULTS.maxWaitMs, 0, 3_600_000),
  ROUTE_PROBE_INITIAL_MS: int(REFUSAL_DEFAULTS.routeProbe.initialMs, 1),
  ROUTE_PROBE_MAX_MS: int(REFUSAL_DEFAULTS.routeProbe.maxMs, 1),
  ROUTE_ACCOUNT_WIDE_AFTER: int(REFUSAL_DEFAULTS.accountWideAfterRoutes, 1, 64),
  BREAKER_FAILURE_THRESHOLD: int(10, 1),
  BREAKER_PROBE_INITIAL_MS: int(1_000, 1),
  BREAKER_PROBE_MAX_MS: int(60_000, 1),
  SHUTDOWN_TIMEOUT_MS: int(30_000, 1),
  /**
   * V8's old-generation growing factor, as the percentage above 1 (V8's --heap-growing-percent,
   * which NODE_OPTIONS does not accept). Under a heap cap below 2 GiB V8's own factor is only
   * 1.3-2x, and the worker, which allocates fast and keeps a large live set while it drains, then
   * spends 25-30% more CPU per command collecting (bench/README.md); 300 is the 4x V8 chooses itself
   * with a cap of 2 GiB or more. The heap cap still bounds the heap, but V8 then also collects less
   * near it, so the default is 0 (V8's own): the Helm chart sets 300 beside a cap sized for it.
   */
  HEAP_GROWING_PERCENT: int(0, 0, 900),
  HEALTH_STALL_MS: int(120_000, 1_000),
  HTTP_PORT: int(9464, 0, 65_535),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Env = z.output<typeof envSchema>;

/** Variables whose values are never printed, logged or put in a ConfigMap. */
export const SECRET_VARIABLES = ['PROVIDER_ACCESS_KEY_ID', 'PROVIDER_ACCESS_KEY_SECRET', 'KAFKA_SASL_PASSWORD', 'SCHEMA_REGISTRY_PASSWORD'] as const;
