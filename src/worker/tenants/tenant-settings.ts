/**
 * Limits per tenant (TENANT_LIMITS), and which tenant a command is (the TENANT_METADATA_KEY entry
 * of its metadata). Pure: parsed once at start-up, asked per command.
 *
 * Why a metadata key and not a field of the command schema: publishers already set metadata, so
 * a platform team can start limiting tenants without every upstream system moving to a new schema
 * version; the key is the operator's choice; and metadata is bounded already (MAX_METADATA_*).
 */
import { MAX_SPEND_CAP, spendCapMicros, type SpendCapSettings } from '../guard/spend-cap.ts';
import { MAX_VELOCITY_LIMIT, type VelocityKind, type VelocityWindow } from '../guard/velocity.ts';
import { MAX_RATE_PER_SECOND } from '../send/rate-limiter.ts';

/** The entry of TENANT_LIMITS that applies to every tenant not named (each with its own budget). */
export const ANY_TENANT = '*';
/** At most this many entries in TENANT_LIMITS. */
export const MAX_TENANT_ENTRIES = 256;
/** A tenant name is at most this many characters; a longer one is cut (and so shares its budget with others cut alike). */
export const MAX_TENANT_CHARS = 64;

/** Recipients per window by key kind, as VELOCITY_{PREFIX,REGION}_PER_{MINUTE,DAY}; 0: none. */
export type VelocityLimits = Readonly<Record<VelocityKind, Readonly<Record<VelocityWindow, number>>>>;

/** TENANT_LIMITS' velocity fields and the limit each sets. */
const VELOCITY_FIELDS = {
  velocityPrefixPerMinute: ['prefix', 'minute'],
  velocityPrefixPerDay: ['prefix', 'day'],
  velocityRegionPerMinute: ['region', 'minute'],
  velocityRegionPerDay: ['region', 'day'],
} as const satisfies Record<string, readonly [VelocityKind, VelocityWindow]>;

export interface TenantLimit {
  /** Deployment-wide caps for the tenant, like SPEND_CAP_PER_HOUR/DAY (the global caps still apply on top). */
  readonly spend: SpendCapSettings | undefined;
  /** Deployment-wide calls per second for the tenant, like RATE_LIMIT_PER_SECOND; 0: none. */
  readonly ratePerSecond: number;
  /**
   * Deployment-wide velocity limits on the tenant's recipients, like VELOCITY_* (its mode, prefix
   * digits, dynamic multiple, block and hold are VELOCITY_*'s; the global limits apply on top).
   */
  readonly velocity: VelocityLimits | undefined;
}

export interface TenantSettings {
  /** The metadata key that names a command's tenant. */
  readonly key: string;
  /** Limits by tenant name. */
  readonly named: ReadonlyMap<string, TenantLimit>;
  /** The `*` entry: the limit each other tenant gets. */
  readonly others: TenantLimit | undefined;
}

/** The command's tenant: its metadata entry under `key`, trimmed and cut to MAX_TENANT_CHARS; undefined without one. */
export function tenantOf(metadata: Readonly<Record<string, string>>, key: string): string | undefined {
  const value = metadata[key]?.trim();
  if (value === undefined || value === '') return undefined;
  return value.length <= MAX_TENANT_CHARS ? value : value.slice(0, MAX_TENANT_CHARS);
}

/** The limit a tenant gets: its own entry, else `*`, else none. */
export function limitOf(settings: TenantSettings, tenant: string | undefined): TenantLimit | undefined {
  if (tenant === undefined) return undefined;
  return settings.named.get(tenant) ?? settings.others;
}

const FIELDS = new Set(['spendCapPerHour', 'spendCapPerDay', 'ratePerSecond', ...Object.keys(VELOCITY_FIELDS)]);

/**
 * Parses TENANT_LIMITS: a JSON object from tenant name (or `*`) to `{spendCapPerHour,
 * spendCapPerDay, ratePerSecond, velocityPrefixPerMinute, velocityPrefixPerDay,
 * velocityRegionPerMinute, velocityRegionPerDay}`, each optional. Every problem is appended naming the tenant and
 * the field.
 */
export function parseTenantLimits(json: string | undefined, key: string, hourMs: number, problems: string[]): TenantSettings {
  const empty: TenantSettings = { key, named: new Map(), others: undefined };
  if (json === undefined || json.trim() === '') return empty;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    problems.push('TENANT_LIMITS: is not JSON (an object from tenant to limits, e.g. {"shop":{"spendCapPerDay":"50"},"*":{"ratePerSecond":10}})');
    return empty;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push('TENANT_LIMITS: must be a JSON object from tenant name (or "*") to its limits');
    return empty;
  }
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > MAX_TENANT_ENTRIES) {
    problems.push(`TENANT_LIMITS: ${entries.length} tenants, at most ${MAX_TENANT_ENTRIES} (use "*" for the rest)`);
    return empty;
  }
  const named = new Map<string, TenantLimit>();
  let others: TenantLimit | undefined;
  for (const [tenant, value] of entries) {
    const where = `TENANT_LIMITS "${tenant.slice(0, MAX_TENANT_CHARS)}"`;
    if (tenant.trim() === '' || tenant.length > MAX_TENANT_CHARS) {
      problems.push(`${where}: a tenant name is 1 to ${MAX_TENANT_CHARS} characters`);
      continue;
    }
    const limit = parseLimit(value, where, hourMs, problems);
    if (limit === undefined) continue;
    if (tenant === ANY_TENANT) others = limit;
    else named.set(tenant, limit);
  }
  return { key, named, others };
}

function parseLimit(value: unknown, where: string, hourMs: number, problems: string[]): TenantLimit | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${where}: must be an object with any of ${[...FIELDS].join(', ')}`);
    return undefined;
  }
  const fields = value as Record<string, unknown>;
  const before = problems.length;
  for (const field of Object.keys(fields))
    if (!FIELDS.has(field)) problems.push(`${where}: unknown field "${field.slice(0, 40)}" (known: ${[...FIELDS].join(', ')})`);
  const hour = money(fields['spendCapPerHour'], `${where} spendCapPerHour`, problems);
  const day = money(fields['spendCapPerDay'], `${where} spendCapPerDay`, problems);
  if (hour !== undefined && day !== undefined && day.micros < hour.micros)
    problems.push(`${where}: spendCapPerDay is below spendCapPerHour, so the hourly cap could never be reached`);
  const rate = fields['ratePerSecond'];
  if (rate !== undefined && (typeof rate !== 'number' || !(rate > 0) || rate > MAX_RATE_PER_SECOND)) {
    problems.push(`${where} ratePerSecond: must be a number above 0 and at most ${MAX_RATE_PER_SECOND}`);
  }
  const velocity = velocityLimits(fields, where, problems);
  if (problems.length > before) return undefined;
  if (hour === undefined && day === undefined && rate === undefined && velocity === undefined) {
    problems.push(`${where}: sets no limit (${[...FIELDS].join(', ')})`);
    return undefined;
  }
  return {
    spend: hour === undefined && day === undefined ? undefined : { caps: { hour: hour?.text, day: day?.text }, hourMs },
    ratePerSecond: typeof rate === 'number' ? rate : 0,
    velocity,
  };
}

/** The velocity fields of one entry (whole numbers of recipients, 1 to MAX_VELOCITY_LIMIT); undefined when it sets none. */
function velocityLimits(fields: Record<string, unknown>, where: string, problems: string[]): VelocityLimits | undefined {
  const limits = { prefix: { minute: 0, day: 0 }, region: { minute: 0, day: 0 } };
  let any = false;
  for (const [field, [kind, window]] of Object.entries(VELOCITY_FIELDS)) {
    const value = fields[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_VELOCITY_LIMIT) {
      problems.push(`${where} ${field}: must be a whole number of recipients from 1 to ${MAX_VELOCITY_LIMIT}`);
      continue;
    }
    limits[kind][window] = value;
    any = true;
  }
  return any ? limits : undefined;
}

/** A cap as SPEND_CAP_* takes it (spendCapMicros). */
function money(value: unknown, where: string, problems: string[]): { text: string; micros: bigint } | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '';
  const micros = spendCapMicros(text);
  if (micros === undefined) {
    problems.push(`${where}: must be a decimal amount above 0 and at most ${MAX_SPEND_CAP}, at most 6 decimals (e.g. "25.50")`);
    return undefined;
  }
  return { text, micros };
}
