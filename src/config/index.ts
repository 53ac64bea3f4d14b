import type { CountryCode } from 'libphonenumber-js';
import type { ValidationPolicy } from '../contracts/validate.ts';
import { geoRuleName, type GeoPolicy, type RegionRules } from '../contracts/geo.ts';
import { ConfigError } from '../errors.ts';
import { toMicros } from '../metrics/metrics.ts';
import { connectionSettings, describeIssues, type KafkaSettings, type RegistrySettings } from './connection.ts';
import type { RefusalScopeSettings } from '../worker/send/refusal-scopes.ts';
import { velocityEnabled, type VelocitySettings } from '../worker/guard/velocity.ts';
import type { SpendCapSettings } from '../worker/guard/spend-cap.ts';
import { accountVariables, declaredAccounts, parseAccountRate, parseAccounts, type AccountSettings } from '../accounts/accounts.ts';
import { parseRouting, type Routing } from '../accounts/routing.ts';
import { parseTenantLimits, type TenantSettings } from '../worker/tenants/tenant-settings.ts';
import { BULK_MARK_LINGER_MS, envSchema, REFUSAL_DEFAULTS, SECRET_VARIABLES, type Env } from './schema.ts';
import { withSecretFiles } from './secret-files.ts';
import { unknownVariables, type UnknownVariable } from './unknown-variables.ts';
import type { Priority } from '../worker/priority/priority.ts';
import { tracingSettings, type TracingSettings } from './tracing.ts';

export { envSchema, SECRET_VARIABLES } from './schema.ts';
export { tracingSettings, type TracingSettings } from './tracing.ts';
export { loadConnectionConfig, type ConnectionSettings, type KafkaSettings, type RegistrySettings } from './connection.ts';

export { PRIORITIES, type Priority } from '../worker/priority/priority.ts';

/** A command topic, the consumer group it is consumed in and its own intent ledger, at one priority. */
export interface CommandSource {
  readonly priority: Priority;
  readonly topic: string;
  readonly consumerGroup: string;
  /**
   * Each command topic has a ledger topic of its own: partition n of a ledger has one writer, the
   * owner of command partition n. A ledger shared by two topics would make a claim wait for the
   * other topic's open transactions (reading to the end waits until they are decided), and a
   * crashed owner's open transaction there until its timeout: chaos found claims of both topics
   * waiting on each other's dead owners for a minute.
   */
  readonly ledgerTopic: string;
  /**
   * How long a busy partition's ledger mark waits, counted from its last transaction, for the marks
   * behind it to share one transaction (0: at once). A partition quiet for longer commits at once.
   */
  readonly markLingerMs: number;
}

export interface WorkerConfig {
  readonly kafka: KafkaSettings;
  readonly registry: RegistrySettings;
  readonly topics: {
    readonly commands: string;
    readonly results: string;
    readonly deadLetter: string;
    readonly ledger: string;
    readonly create: boolean;
    readonly partitions: number;
    readonly replicationFactor: number;
  };
  readonly consumerGroup: string;
  /**
   * The command topics this process consumes, each in its own consumer group, highest priority
   * first: COMMAND_TOPIC at `normal`, and PRIORITY_COMMAND_TOPIC at `high` when set
   * (docs/priority.md says why topics rather than a field in the command).
   */
  readonly sources: readonly CommandSource[];
  /** Under contention, the share of slots, mark permits and tokens the normal priority still gets. */
  readonly normalMinShare: number;
  /** How long the group waits for a silent member (e.g. a killed pod) before reassigning its partitions. */
  readonly sessionTimeoutMs: number;
  /** Fetch sizes: smaller batches measured faster and leaner than kafkajs's 1 MB / 10 MB defaults (bench/README.md). */
  readonly fetch: { readonly maxBytesPerPartition: number; readonly maxBytes: number };
  readonly transactionalIdPrefix: string;
  /**
   * The intent ledger (sends at most once): `enabled` marks each command in a compacted ledger
   * topic before it is sent; `inDoubt` says what happens to a marked command without a result
   * found at assignment; `maxRunAhead` bounds the records dispatched past a partition's committed
   * offset (and so the commands in doubt after a crash); `dedupWindow` is how many recent
   * commandIds per partition are remembered to skip a repeated command record.
   */
  readonly ledger: { readonly enabled: boolean; readonly inDoubt: 'report' | 'resend'; readonly maxRunAhead: number; readonly dedupWindow: number };
  readonly provider: {
    readonly baseUrl: string;
    readonly accessKeyId: string;
    readonly accessKeySecret: string | undefined;
    readonly connectTimeoutMs: number;
    readonly responseTimeoutMs: number;
    /** Answers larger than this are not read to the end: malformed, not retried. */
    readonly maxResponseBytes: number;
    readonly retry: {
      readonly maxAttempts: number;
      readonly budgetMs: number;
      readonly baseDelayMs: number;
      readonly maxDelayMs: number;
      readonly retryAmbiguous: boolean;
    };
  };
  /** Every account of the service: `default` (the provider settings above) first, then ACCOUNTS. */
  readonly accounts: readonly AccountSettings[];
  /** Which accounts each command may go through, in order (ACCOUNT_ROUTES, ACCOUNT_FAILOVER). */
  readonly routing: Routing;
  /** The tenant of each command (TENANT_METADATA_KEY) and the limits per tenant (TENANT_LIMITS). */
  readonly tenants: TenantSettings;
  readonly maxInFlight: number;
  /** Ledger marks ahead of the free slots: paced (`auto`), or that many. */
  readonly marksAhead: 'auto' | number;
  /** Bytes of command records dispatched and not yet done, process-wide (a partition over it is not fetched). */
  readonly maxBytesInHand: number;
  /** Deployment-wide calls per second (0 = none); each process applies its partitions' share. */
  readonly rateLimitPerSecond: number;
  readonly commitIntervalMs: number;
  /** The ValidationPolicy of src/contracts/validate.ts. */
  readonly validation: ValidationPolicy;
  /** Largest command record (key + value + header bytes) the worker decodes; larger ones are dead-lettered as RECORD_TOO_LARGE. */
  readonly maxCommandBytes: number;
  readonly funds: { readonly policy: 'pause' | 'fail'; readonly probeInitialMs: number; readonly probeMaxMs: number; readonly pauseMaxMs: number };
  /** How far a refusal reaches: route pauses, the cost ceiling, a held command's wait (src/worker/send/refusal-scopes.ts). */
  readonly refusals: RefusalScopeSettings;
  /** The guards in front of the service (docs/guards.md): velocity limits per destination and spend caps; off by default. */
  readonly guard: { readonly velocity: VelocitySettings; readonly spend: SpendCapSettings };
  readonly breaker: { readonly failureThreshold: number; readonly probeInitialMs: number; readonly probeMaxMs: number };
  readonly shutdownTimeoutMs: number;
  /** HEAP_GROWING_PERCENT: V8's --heap-growing-percent, applied by `run` at start-up; 0 leaves V8's own. */
  readonly heapGrowingPercent: number;
  readonly healthStallMs: number;
  readonly httpPort: number;
  readonly logLevel: Env['LOG_LEVEL'];
  /** OpenTelemetry tracing, from the standard OTEL_* variables (off without an OTLP endpoint). */
  readonly tracing: TracingSettings;
}

/**
 * Parses and validates the environment once, at start-up. Throws a ConfigError listing every
 * problem (never only the first); messages name the variable but never echo a secret's value.
 */
export function loadConfig(given: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const problems: string[] = [];
  // Each secret may come from a file (`<NAME>_FILE`) instead: read before anything checks it.
  const env = withSecretFiles(given, SECRET_VARIABLES, problems);
  const parsed = envSchema.safeParse(env);
  const tracing = tracingSettings(env, problems);
  if (!parsed.success) throw new ConfigError([...describeIssues(parsed.error.issues), ...problems]);
  const e = parsed.data;
  const connection = connectionSettings(e, problems);
  if (e.PROVIDER_RETRY_MAX_DELAY_MS < e.PROVIDER_RETRY_BASE_MS) problems.push('PROVIDER_RETRY_MAX_DELAY_MS: must be at least PROVIDER_RETRY_BASE_MS');
  if (e.FUNDS_PROBE_MAX_MS < e.FUNDS_PROBE_INITIAL_MS) problems.push('FUNDS_PROBE_MAX_MS: must be at least FUNDS_PROBE_INITIAL_MS');
  if (e.BREAKER_PROBE_MAX_MS < e.BREAKER_PROBE_INITIAL_MS) problems.push('BREAKER_PROBE_MAX_MS: must be at least BREAKER_PROBE_INITIAL_MS');
  if (e.ROUTE_PROBE_MAX_MS < e.ROUTE_PROBE_INITIAL_MS) problems.push('ROUTE_PROBE_MAX_MS: must be at least ROUTE_PROBE_INITIAL_MS');
  if (e.MARKS_AHEAD !== 'auto' && e.MARKS_AHEAD > 2 * e.MAX_IN_FLIGHT) problems.push(`MARKS_AHEAD: at most 2 × MAX_IN_FLIGHT (${2 * e.MAX_IN_FLIGHT})`);
  if (new Set([e.COMMAND_TOPIC, e.RESULT_TOPIC, e.DEAD_LETTER_TOPIC, e.LEDGER_TOPIC]).size !== 4)
    problems.push('COMMAND_TOPIC, RESULT_TOPIC, DEAD_LETTER_TOPIC, LEDGER_TOPIC: must be four different topics');
  const accounts = parseAccounts(
    env,
    {
      baseUrl: e.PROVIDER_BASE_URL.replace(/\/+$/, ''),
      accessKeyId: e.PROVIDER_ACCESS_KEY_ID,
      accessKeySecret: e.PROVIDER_ACCESS_KEY_SECRET,
      ratePerSecond: parseAccountRate('PROVIDER_RATE_LIMIT_PER_SECOND', e.PROVIDER_RATE_LIMIT_PER_SECOND, problems),
    },
    problems,
  );
  const routing = parseRouting(
    e.ACCOUNT_ROUTES,
    e.ACCOUNT_FAILOVER === undefined ? accounts.map((a) => a.name) : e.ACCOUNT_FAILOVER.split(',').map((name) => name.trim()),
    new Set(accounts.map((a) => a.name)),
    problems,
  );
  const sources = commandSources(e, problems);
  const geo = geoPolicy(e, problems);
  const guard = guardSettings(e, problems);
  const tenants = parseTenantLimits(e.TENANT_LIMITS, e.TENANT_METADATA_KEY, e.SPEND_CAP_HOUR_MS, problems);
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    kafka: connection.kafka,
    registry: connection.registry,
    topics: {
      commands: e.COMMAND_TOPIC,
      results: e.RESULT_TOPIC,
      deadLetter: e.DEAD_LETTER_TOPIC,
      ledger: e.LEDGER_TOPIC,
      create: e.TOPICS_CREATE,
      partitions: e.TOPICS_PARTITIONS,
      replicationFactor: e.TOPICS_REPLICATION_FACTOR,
    },
    consumerGroup: e.CONSUMER_GROUP,
    sources,
    normalMinShare: e.PRIORITY_NORMAL_MIN_SHARE,
    sessionTimeoutMs: e.KAFKA_SESSION_TIMEOUT_MS,
    fetch: { maxBytesPerPartition: e.KAFKA_FETCH_MAX_BYTES_PER_PARTITION, maxBytes: e.KAFKA_FETCH_MAX_BYTES },
    transactionalIdPrefix: e.TRANSACTIONAL_ID_PREFIX,
    ledger: { enabled: e.LEDGER_ENABLED, inDoubt: e.IN_DOUBT_POLICY, maxRunAhead: e.MAX_RUN_AHEAD, dedupWindow: e.DEDUP_WINDOW },
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
    accounts,
    routing,
    tenants,
    maxInFlight: e.MAX_IN_FLIGHT,
    marksAhead: e.MARKS_AHEAD,
    maxBytesInHand: e.MAX_BYTES_IN_HAND,
    rateLimitPerSecond: e.RATE_LIMIT_PER_SECOND,
    commitIntervalMs: e.COMMIT_INTERVAL_MS,
    validation: {
      homeRegion: e.HOME_REGION as CountryCode,
      maxRecipients: e.MAX_RECIPIENTS,
      partialRecipients: e.PARTIAL_RECIPIENTS,
      maxContentChars: e.MAX_CONTENT_CHARS,
      maxContentSegments: e.MAX_CONTENT_SEGMENTS,
      maxTemplateIdChars: e.MAX_TEMPLATE_ID_CHARS,
      maxTemplateVariables: e.MAX_TEMPLATE_VARIABLES,
      maxTemplateKeyChars: e.MAX_TEMPLATE_KEY_CHARS,
      maxTemplateValueChars: e.MAX_TEMPLATE_VALUE_CHARS,
      maxMetadataEntries: e.MAX_METADATA_ENTRIES,
      maxMetadataBytes: e.MAX_METADATA_BYTES,
      geo,
    },
    maxCommandBytes: e.MAX_COMMAND_BYTES,
    guard,
    funds: { policy: e.FUNDS_POLICY, probeInitialMs: e.FUNDS_PROBE_INITIAL_MS, probeMaxMs: e.FUNDS_PROBE_MAX_MS, pauseMaxMs: e.FUNDS_PAUSE_MAX_MS },
    refusals: {
      maxWaitMs: e.ROUTE_PAUSE_MAX_MS,
      routeProbe: { initialMs: e.ROUTE_PROBE_INITIAL_MS, maxMs: e.ROUTE_PROBE_MAX_MS },
      fundsProbe: { initialMs: e.FUNDS_PROBE_INITIAL_MS, maxMs: e.FUNDS_PROBE_MAX_MS },
      accountWideAfterRoutes: e.ROUTE_ACCOUNT_WIDE_AFTER,
      escalationWindowMs: REFUSAL_DEFAULTS.escalationWindowMs,
      maxPausedRoutes: REFUSAL_DEFAULTS.maxPausedRoutes,
    },
    breaker: { failureThreshold: e.BREAKER_FAILURE_THRESHOLD, probeInitialMs: e.BREAKER_PROBE_INITIAL_MS, probeMaxMs: e.BREAKER_PROBE_MAX_MS },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    heapGrowingPercent: e.HEAP_GROWING_PERCENT,
    healthStallMs: e.HEALTH_STALL_MS,
    httpPort: e.HTTP_PORT,
    logLevel: e.LOG_LEVEL,
    tracing,
  };
}

/**
 * The geo permissions of GEO_*, with the contradictions the lists cannot express: a region both
 * allowed and denied where both lists apply, and a voice allow-list without HOME_REGION (voice
 * codes go to HOME_REGION only, so it would refuse every one).
 */
function geoPolicy(e: Env, problems: string[]): GeoPolicy {
  const rules = (allowed: readonly string[] | undefined, denied: readonly string[] | undefined): RegionRules => ({
    ...(allowed !== undefined && { allowed }),
    ...(denied !== undefined && { denied }),
  });
  const geo: GeoPolicy = {
    mode: e.GEO_MODE,
    all: rules(e.GEO_ALLOWED_REGIONS, e.GEO_DENIED_REGIONS),
    text: rules(e.GEO_TEXT_ALLOWED_REGIONS, e.GEO_TEXT_DENIED_REGIONS),
    voice: rules(e.GEO_VOICE_ALLOWED_REGIONS, e.GEO_VOICE_DENIED_REGIONS),
  };
  // A region an allow-list names but a list that also applies denies (or, for an operation's list,
  // the common allow-list leaves out) can never be sent to: the list says something it cannot do.
  const { all, text, voice } = geo;
  const contradictions = [
    ['all', all.allowed, 'all', all.denied],
    ['text', text.allowed, 'all', all.denied],
    ['text', text.allowed, 'text', text.denied],
    ['voice', voice.allowed, 'all', all.denied],
    ['voice', voice.allowed, 'voice', voice.denied],
  ] as const;
  for (const [scope, allowed, denyScope, denied] of contradictions) {
    const both = allowed?.filter((region) => denied?.includes(region) === true) ?? [];
    if (both.length > 0) {
      problems.push(
        `${geoRuleName(scope, 'allowed')}, ${geoRuleName(denyScope, 'denied')}: ${both.join(', ')} ${both.length === 1 ? 'is' : 'are'} both allowed and denied`,
      );
    }
  }
  for (const scope of ['text', 'voice'] as const) {
    const outside = geo[scope].allowed?.filter((region) => all.allowed !== undefined && !all.allowed.includes(region)) ?? [];
    if (outside.length > 0) {
      problems.push(
        `${geoRuleName(scope, 'allowed')}: ${outside.join(', ')} ${outside.length === 1 ? 'is' : 'are'} not in GEO_ALLOWED_REGIONS, which applies to every operation, so ${outside.length === 1 ? 'it' : 'they'} would be refused anyway`,
      );
    }
  }
  if (geo.voice.allowed !== undefined && !geo.voice.allowed.includes(e.HOME_REGION)) {
    problems.push(
      `GEO_VOICE_ALLOWED_REGIONS: voice codes are only sent to HOME_REGION (${e.HOME_REGION}), which this list leaves out, so every voice code would be refused; to stop voice codes, put ${e.HOME_REGION} in GEO_VOICE_DENIED_REGIONS instead`,
    );
  }
  return geo;
}

/** The velocity limits and spend caps, with what their variables cannot say alone. */
function guardSettings(e: Env, problems: string[]): WorkerConfig['guard'] {
  const velocity: VelocitySettings = {
    mode: e.VELOCITY_MODE,
    prefixDigits: e.VELOCITY_PREFIX_DIGITS,
    limits: {
      prefix: { minute: e.VELOCITY_PREFIX_PER_MINUTE, day: e.VELOCITY_PREFIX_PER_DAY },
      region: { minute: e.VELOCITY_REGION_PER_MINUTE, day: e.VELOCITY_REGION_PER_DAY },
    },
    dynamicMultiple: e.VELOCITY_DYNAMIC_MULTIPLE,
    blockMs: e.VELOCITY_BLOCK_MS,
    maxTrackedKeys: e.VELOCITY_MAX_TRACKED_KEYS,
    holdMaxMs: e.VELOCITY_HOLD_MAX_MS,
  };
  if (e.VELOCITY_DYNAMIC_MULTIPLE > 0 && !velocityEnabled(velocity)) {
    problems.push('VELOCITY_DYNAMIC_MULTIPLE: multiplies the trailing mean above a limit, but no VELOCITY_*_PER_* limit is set (the limits are the floors)');
  }
  if (e.VELOCITY_DYNAMIC_MULTIPLE > 0 && e.VELOCITY_DYNAMIC_MULTIPLE < 1) {
    problems.push('VELOCITY_DYNAMIC_MULTIPLE: must be 0 (static limits) or at least 1 (a limit below the usual traffic would block it)');
  }
  const hour = e.SPEND_CAP_PER_HOUR;
  const day = e.SPEND_CAP_PER_DAY;
  if (hour !== undefined && day !== undefined && (toMicros(day) ?? 0n) < (toMicros(hour) ?? 0n)) {
    problems.push('SPEND_CAP_PER_DAY: is below SPEND_CAP_PER_HOUR, so the hourly cap could never be reached; lower SPEND_CAP_PER_HOUR or raise the daily cap');
  }
  return { velocity, spend: { caps: { hour, day }, hourMs: e.SPEND_CAP_HOUR_MS } };
}

/** The configuration as it may be logged: secrets replaced by whether they are set. */
export function describeConfig(config: WorkerConfig): Record<string, unknown> {
  return {
    ...config,
    kafka: {
      ...config.kafka,
      ssl: config.kafka.ssl === false ? false : { rejectUnauthorized: config.kafka.ssl.rejectUnauthorized },
      sasl:
        config.kafka.sasl === undefined ? undefined : { mechanism: config.kafka.sasl.mechanism, username: config.kafka.sasl.username, password: '[redacted]' },
    },
    registry: {
      url: config.registry.url,
      auth: config.registry.auth === undefined ? undefined : { username: config.registry.auth.username, password: '[redacted]' },
    },
    provider: { ...config.provider, accessKeyId: '[redacted]', accessKeySecret: config.provider.accessKeySecret === undefined ? undefined : '[redacted]' },
    accounts: config.accounts.map((a) => ({ ...a, accessKeyId: '[redacted]', accessKeySecret: a.accessKeySecret === undefined ? undefined : '[redacted]' })),
  };
}

/** COMMAND_TOPIC at normal priority, and PRIORITY_COMMAND_TOPIC at high when set (first: highest). */
function commandSources(e: Env, problems: string[]): CommandSource[] {
  const normal: CommandSource = {
    priority: 'normal',
    topic: e.COMMAND_TOPIC,
    consumerGroup: e.CONSUMER_GROUP,
    ledgerTopic: e.LEDGER_TOPIC,
    // At most COMMIT_INTERVAL_MS: a mark never waits longer than a result would.
    markLingerMs: Math.min(e.MARK_LINGER_MS ?? (e.PRIORITY_COMMAND_TOPIC === undefined ? 0 : BULK_MARK_LINGER_MS), e.COMMIT_INTERVAL_MS),
  };
  if (e.PRIORITY_COMMAND_TOPIC === undefined) {
    if (e.PRIORITY_CONSUMER_GROUP !== undefined) problems.push('PRIORITY_CONSUMER_GROUP: set without PRIORITY_COMMAND_TOPIC');
    if (e.PRIORITY_LEDGER_TOPIC !== undefined) problems.push('PRIORITY_LEDGER_TOPIC: set without PRIORITY_COMMAND_TOPIC');
    return [normal];
  }
  const high: CommandSource = {
    priority: 'high',
    topic: e.PRIORITY_COMMAND_TOPIC,
    consumerGroup: e.PRIORITY_CONSUMER_GROUP ?? `${e.CONSUMER_GROUP}-priority`,
    ledgerTopic: e.PRIORITY_LEDGER_TOPIC ?? `${e.PRIORITY_COMMAND_TOPIC}.ledger`,
    // Someone waits for every code: its marks commit at once.
    markLingerMs: 0,
  };
  const others = [e.COMMAND_TOPIC, e.RESULT_TOPIC, e.DEAD_LETTER_TOPIC, e.LEDGER_TOPIC];
  if (others.includes(high.topic)) problems.push('PRIORITY_COMMAND_TOPIC: must differ from COMMAND_TOPIC, RESULT_TOPIC, DEAD_LETTER_TOPIC and LEDGER_TOPIC');
  if ([...others, high.topic].includes(high.ledgerTopic))
    problems.push('PRIORITY_LEDGER_TOPIC: must differ from every other topic (each command topic has a ledger of its own)');
  // One group per topic: a rebalance of the bulk topic never holds the codes (docs/priority.md).
  if (high.consumerGroup === e.CONSUMER_GROUP) problems.push('PRIORITY_CONSUMER_GROUP: must differ from CONSUMER_GROUP (one group per command topic)');
  return [high, normal];
}

/** The OpenTelemetry variables the worker reads (tracing.ts), besides its own. */
const TRACING_VARIABLES = [
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
];

/**
 * Variables of `env` that look like settings of the worker but are none (`SMS_WORKER_*`, or a
 * misspelt name: `MAX_INFLIGHT`), for a warning at start-up: such a variable is otherwise silently
 * ignored. `also`: other names that are fine (the receiver's own).
 */
export function unknownSettings(env: NodeJS.ProcessEnv = process.env, also: readonly string[] = []): UnknownVariable[] {
  const accountNames = declaredAccounts(env).flatMap((name) => {
    const { secrets, plain } = accountVariables(name);
    return [...secrets, ...secrets.map((secret) => `${secret}_FILE`), ...plain];
  });
  const known = [...Object.keys(envSchema.shape), ...SECRET_VARIABLES.map((name) => `${name}_FILE`), ...TRACING_VARIABLES, ...accountNames, ...also];
  return unknownVariables(env, known);
}
