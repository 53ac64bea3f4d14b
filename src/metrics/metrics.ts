import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PAUSE_REASONS } from '../worker/send/service-gate.ts';

/** Values of `sms_worker_paused{reason}`: every gate reason, a spend cap (src/worker/guard/spend-holds.ts) and the shutdown. */
export const PAUSED_LABELS = [...PAUSE_REASONS, 'spend_cap', 'shutdown'] as const;

/**
 * Label values that come from outside (provider codes, upstream names) are bounded: after
 * `limit` distinct values, new ones are reported as "other", so a misbehaving service cannot
 * blow up the series count.
 */
export class BoundedLabel {
  readonly #seen = new Set<string>();
  readonly #limit: number;
  constructor(limit: number) {
    this.#limit = limit;
  }
  value(raw: string): string {
    const clean = raw.length > 64 ? raw.slice(0, 64) : raw;
    if (this.#seen.has(clean)) return clean;
    if (this.#seen.size >= this.#limit) return 'other';
    this.#seen.add(clean);
    return clean;
  }
}

/** Longest amount string toMicros reads (anything longer is no amount we can count). */
const MAX_AMOUNT_LENGTH = 64;
const MAX_SAFE_MICROS = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Exact decimal string → integer micro-units (six fractional digits, further digits cut), without
 * floats. Undefined for anything that is not such a decimal, and for amounts whose micro-units
 * are beyond ±Number.MAX_SAFE_INTEGER (≈ 9 billion units): the result always converts to a
 * finite, exact Number, so a counter fed with it cannot throw (a 400-digit price once made it
 * Infinity, and prom-client throws on that).
 */
export function toMicros(amount: string): bigint | undefined {
  if (amount.length > MAX_AMOUNT_LENGTH) return undefined;
  const match = /^(-?)(\d+)(?:\.(\d{1,6})\d*)?$/.exec(amount.trim());
  if (match === null) return undefined;
  const [, sign, whole = '0', fraction = ''] = match;
  const micros = BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
  if (micros > MAX_SAFE_MICROS) return undefined;
  return sign === '-' ? -micros : micros;
}

/** Most regions a route's `region` label names; a route with more names its first 8 (sorted), then `+…`. */
export const ROUTE_LABEL_MAX_REGIONS = 8;

/**
 * The `region` label of a route (`sms_worker_route_paused_since_timestamp_seconds`): its
 * destination regions (ISO 3166 alpha-2; `001` for non-geographic numbers), de-duplicated, sorted and joined with `+` (`AU`,
 * `AU+NZ`); after ROUTE_LABEL_MAX_REGIONS regions the rest are cut and `+…` marks the cut, so the
 * label stays short whatever the command. An empty set reads `none`.
 */
export function routeLabel(regions: readonly string[]): string {
  const sorted = [...new Set(regions)].sort();
  if (sorted.length === 0) return 'none';
  const shown = sorted.slice(0, ROUTE_LABEL_MAX_REGIONS).join('+');
  return sorted.length > ROUTE_LABEL_MAX_REGIONS ? `${shown}+…` : shown;
}

/** What the worker paused in answer to a refusal: one route, commands above a cost ceiling, or the whole account. */
export const REFUSAL_SCOPES = ['route', 'command', 'account'] as const;
export type RefusalScope = (typeof REFUSAL_SCOPES)[number];

export type WorkerMetrics = ReturnType<typeof createMetrics>;

export function createMetrics(registry: Registry = new Registry()) {
  const prefix = 'sms_worker_';
  collectDefaultMetrics({ register: registry, prefix });
  const codes = new BoundedLabel(50);
  const upstreams = new BoundedLabel(100);
  const regions = new BoundedLabel(250);
  const refusalCodes = new BoundedLabel(20);
  const refusals = new Counter({
    name: `${prefix}refusals_total`,
    help: `Refusals by the service that paused something, by the account refused (ACCOUNTS, at most 8), the service's code (101301, 105400, PROVIDER_HTTP_401|403|404|407; bounded: 20 distinct codes, then "other") and by what the worker paused in answer on that account (scope: ${REFUSAL_SCOPES.join(', ')}).`,
    labelNames: ['account', 'code', 'scope'],
    registers: [registry],
  });

  const tenants = new BoundedLabel(20);
  const metrics = {
    registry,
    /** The label of a tenant: its name for the first 20 seen, then "other". */
    tenantLabel: (tenant: string): string => tenants.value(tenant),
    tenantCapPauses: new Counter({
      name: `${prefix}tenant_cap_pauses_total`,
      help: 'Times a tenant\'s sending paused at its spend cap (TENANT_LIMITS): its commands wait for room, other tenants keep sending; by tenant (the first 20 tenants seen by name, then "other").',
      labelNames: ['tenant'],
      registers: [registry],
    }),
    failovers: new Counter({
      name: `${prefix}failovers_total`,
      help: 'Commands that left an account for the next of their list, by the account left (ACCOUNTS, at most 8) and why (no-route, funds, refused-client, unreachable, paused): that account proved it did not send them.',
      labelNames: ['account', 'reason'],
      registers: [registry],
    }),
    commandsConsumed: new Counter({ name: `${prefix}commands_consumed_total`, help: 'Command records consumed (before decoding).', registers: [registry] }),
    results: new Counter({
      name: `${prefix}results_total`,
      help: 'Results committed, by operation, outcome, error code ("" when SENT) and priority of the command topic (high, normal).',
      labelNames: ['operation', 'outcome', 'code', 'priority'],
      registers: [registry],
    }),
    providerRequests: new Counter({
      name: `${prefix}provider_requests_total`,
      help: 'HTTP attempts to the messaging service, by account (ACCOUNTS, at most 8), operation and outcome (success or failure class).',
      labelNames: ['account', 'operation', 'outcome'],
      registers: [registry],
    }),
    providerLatency: new Histogram({
      name: `${prefix}provider_request_duration_seconds`,
      help: 'Duration of each HTTP attempt to the messaging service, by account (at most 8), operation and outcome.',
      labelNames: ['account', 'operation', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    timeToSend: new Histogram({
      name: `${prefix}time_to_send_seconds`,
      help: "Time from a command record's Kafka timestamp (its publication) to the start of its first call to the messaging service, by priority of the command topic (high, normal).",
      labelNames: ['priority'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    sendStages: new Histogram({
      name: `${prefix}send_stage_seconds`,
      help: 'Time to send split into its stages, once per command whose first call started, by priority and stage: delivery (publication to handling: the fetch, run-ahead, an earlier record of the same key), preparation (decoding, validation, repeats, the destination screen, an earlier owner’s handover of an in-doubt command), admission (pauses, holds, spend cap, rate limit), mark (the ledger mark, its permit and the in-flight slot).',
      labelNames: ['priority', 'stage'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    retries: new Counter({
      name: `${prefix}provider_retries_total`,
      help: 'Retries of calls to the messaging service, by account (at most 8), operation and failure class.',
      labelNames: ['account', 'operation', 'class'],
      registers: [registry],
    }),
    inFlight: new Gauge({ name: `${prefix}in_flight_sends`, help: 'Sends currently waiting for the messaging service.', registers: [registry] }),
    marksAhead: new Gauge({
      name: `${prefix}marks_ahead`,
      help: 'Ledger marks this process may keep open or committed beyond its free in-flight slots (MARKS_AHEAD; paced to what the slots need when auto).',
      registers: [registry],
    }),
    rateLimitShare: new Gauge({
      name: `${prefix}rate_limit_per_second`,
      help: "This process's share of the deployment-wide RATE_LIMIT_PER_SECOND (by owned command partitions); 0 without a limit.",
      registers: [registry],
    }),
    billedMessages: new Counter({
      name: `${prefix}billed_messages_total`,
      help: 'Messages billed by the service, by the account that sent them (at most 8), region and upstream.',
      labelNames: ['account', 'region', 'upstream'],
      registers: [registry],
    }),
    chargedMicros: new Counter({
      name: `${prefix}charged_amount_micros_total`,
      help: 'Amount charged by the service, in millionths of the account currency (exact integer sum of per-message prices), by the account charged (at most 8), region and upstream.',
      labelNames: ['account', 'region', 'upstream'],
      registers: [registry],
    }),
    protocolViolations: new Counter({
      name: `${prefix}protocol_violations_total`,
      help: 'Claims failed because the partition machine found one of its invariants broken (a bug: each is also an error log line), by invariant.',
      labelNames: ['invariant'],
      registers: [registry],
    }),
    deadLettered: new Counter({
      name: `${prefix}dead_lettered_total`,
      help: 'Records sent to the dead-letter topic, by reason.',
      labelNames: ['reason'],
      registers: [registry],
    }),
    paused: new Gauge({
      name: `${prefix}paused`,
      help: `1 while consumption is paused, by reason (${PAUSED_LABELS.join(', ')}).`,
      labelNames: ['reason'],
      registers: [registry],
    }),
    accountPaused: new Gauge({
      name: `${prefix}account_paused`,
      help: `1 while an account of the service (ACCOUNTS; default: the PROVIDER_* one) is paused, by account (at most 8) and reason (${PAUSE_REASONS.join(', ')}): its commands go on to the next account of their list, or wait at the last.`,
      labelNames: ['account', 'reason'],
      registers: [registry],
    }),
    routePausedSince: new Gauge({
      name: `${prefix}route_paused_since_timestamp_seconds`,
      help: 'Unix time at which a route (operation × destination regions) was paused on an account after a 101301 refusal, per paused route: account (at most 8), operation (text, voice) and region (ISO 3166 alpha-2 codes, 001 for non-geographic numbers, sorted and joined with "+", e.g. AU or AU+NZ, at most 8 then "+…"). At most 64 routes are paused at once per account; a series is removed when its route is resumed or evicted.',
      labelNames: ['account', 'operation', 'region'],
      registers: [registry],
    }),
    pausedRoutes: new Gauge({
      name: `${prefix}paused_routes`,
      help: 'Routes (operation × destination regions) paused now after a 101301 refusal, by account (at most 64 each).',
      labelNames: ['account'],
      registers: [registry],
    }),
    fundsCeiling: new Gauge({
      name: `${prefix}funds_cost_ceiling`,
      help: 'While a 105400 refusal holds back large commands on an account: the cost (billed units = recipients × segments) at and above which commands are held there; 0 when none are; by account.',
      labelNames: ['account'],
      registers: [registry],
    }),
    consumerLag: new Gauge({
      name: `${prefix}consumer_lag`,
      help: 'Records between the committed position and the high watermark, per partition.',
      labelNames: ['topic', 'partition'],
      registers: [registry],
    }),
    lastProgress: new Gauge({
      name: `${prefix}last_progress_timestamp_seconds`,
      help: 'Unix time of the last sign of consume-loop progress (fetch, result, commit).',
      registers: [registry],
    }),
    transactions: new Counter({
      name: `${prefix}transactions_total`,
      help: 'Kafka transactions (results + offsets), by outcome.',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    commitLatency: new Histogram({
      name: `${prefix}commit_duration_seconds`,
      help: 'Duration of a results+offsets transaction.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    recoveries: new Counter({
      name: `${prefix}partition_recoveries_total`,
      help: 'Partitions claimed: producer fenced the previous owner, ledger and offsets read.',
      registers: [registry],
    }),
    claimSeconds: new Histogram({
      name: `${prefix}partition_claim_seconds`,
      help: 'How long claiming a partition took: waiting for the earlier owner, fencing, reading offsets, ledger and the repeat window.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    claimsKept: new Counter({
      name: `${prefix}partition_claims_kept_total`,
      help: 'Partitions a rebalance left with this process and whose claim went on (no fence, no ledger read, calls under way kept).',
      registers: [registry],
    }),
    lostPartitions: new Gauge({
      name: `${prefix}lost_partitions`,
      help: 'Partitions this process stopped working because their producer was fenced (another owner, or a former member’s fence that landed late), until the next rebalance or until it claims them again (at most 3 times a generation). Above 0 for minutes: a partition nobody works.',
      registers: [registry],
    }),
    inDoubt: new Counter({
      name: `${prefix}in_doubt_commands_total`,
      help: 'Commands found marked in the intent ledger without a result at assignment, by what was done (reported UNKNOWN, handed over with a result, handed over as withdrawn and sent, its result found in the result topic, or resent).',
      labelNames: ['action'],
      registers: [registry],
    }),
    duplicateCommands: new Counter({
      name: `${prefix}duplicate_commands_total`,
      help: 'Command records skipped because a record with the same commandId on the partition already has a result (within DEDUP_WINDOW).',
      registers: [registry],
    }),
    geoRefusals: new Counter({
      name: `${prefix}geo_rejections_total`,
      help: 'Recipients outside the geo permissions (GEO_*_REGIONS), counted when their command is validated, by operation (text, voice), region (ISO 3166-1 alpha-2 of the parsed number, 001 for non-geographic numbers: at most the 246 regions libphonenumber knows) and mode (enforce: refused, monitor: sent anyway).',
      labelNames: ['operation', 'region', 'mode'],
      registers: [registry],
    }),
    velocityRejections: new Counter({
      name: `${prefix}velocity_rejections_total`,
      help: 'Recipients over a velocity limit per destination (VELOCITY_*), counted when their command is validated, by rule (VELOCITY_PREFIX_PER_MINUTE, VELOCITY_PREFIX_PER_DAY, VELOCITY_REGION_PER_MINUTE, VELOCITY_REGION_PER_DAY), region (ISO 3166-1 alpha-2 of the parsed number, 001 for non-geographic numbers: at most 246), mode (enforce: refused, monitor: sent anyway) and tenant (whose limit in TENANT_LIMITS: the first 20 tenants by name, then "other"; "" for the deployment\'s VELOCITY_* limits).',
      labelNames: ['rule', 'region', 'mode', 'tenant'],
      registers: [registry],
    }),
    velocityBlocks: new Counter({
      name: `${prefix}velocity_blocks_total`,
      help: 'Blocks started by the velocity limits (a destination prefix or a region over its limit, blocked for VELOCITY_BLOCK_MS), by kind (prefix, region) and region (at most 246).',
      labelNames: ['kind', 'region'],
      registers: [registry],
    }),
    velocityBlocked: new Gauge({
      name: `${prefix}velocity_blocked_keys`,
      help: 'Destination prefixes and regions blocked now by the velocity limits, by kind (prefix, region) and region (at most 246; refreshed at most every second while any is blocked).',
      labelNames: ['kind', 'region'],
      registers: [registry],
    }),
    spendMicros: new Gauge({
      name: `${prefix}spend_micros`,
      help: "What this process's sends were charged in the spend caps' sliding window (hour, day), in millionths of the account currency (SPEND_CAP_*).",
      labelNames: ['window'],
      registers: [registry],
    }),
    spendCapMicros: new Gauge({
      name: `${prefix}spend_cap_micros`,
      help: "This process's share of the deployment-wide spend cap per window (hour, day), in millionths of the account currency; absent without a cap.",
      labelNames: ['window'],
      registers: [registry],
    }),
    ledgerMarks: new Counter({
      name: `${prefix}ledger_marks_total`,
      help: 'Commands marked "attempting" in the intent ledger before being sent.',
      registers: [registry],
    }),
    label: {
      code: (raw: string) => codes.value(raw),
      upstream: (raw: string) => upstreams.value(raw),
      region: (raw: string) => regions.value(raw),
    },
  };
  for (const reason of PAUSED_LABELS) metrics.paused.set({ reason }, 0);
  return {
    ...metrics,
    /**
     * `sms_worker_refusals_total{account, code, scope}`: the code passes through a BoundedLabel of
     * its own (20 distinct codes, then `other`), so whatever the service answers, the series stay few.
     */
    refusals: {
      inc(labels: { account: string; code: string; scope: RefusalScope }, value = 1): void {
        refusals.inc({ account: labels.account, code: refusalCodes.value(labels.code), scope: labels.scope }, value);
      },
      get: () => refusals.get(),
    },
    /**
     * Adds one message's price to the charged-amount counter. Never throws, whatever the string:
     * an amount that is not a non-negative decimal within toMicros' range is not counted.
     */
    countCharge(labels: { account: string; region: string; upstream: string }, price: string): boolean {
      const micros = toMicros(price);
      if (micros === undefined || micros < 0n) return false;
      metrics.chargedMicros.inc(labels, Number(micros));
      return true;
    },
  };
}
