/**
 * Geo permissions: which destination regions a deployment sends to, for all operations and per
 * operation (text messages, voice codes). Pure: the region comes from the parsed number
 * (phone.ts), the lists from the validation policy (policy.ts, filled from GEO_* in src/config).
 * A recipient must pass every list that applies to it: the lists for all operations and those
 * of its operation (an operation's lists can only narrow, never widen, the common ones).
 */
import { getCountries } from 'libphonenumber-js/max';

/** The operations geo permissions tell apart (the `operation` label of the metrics, the `GEO_<OP>_*` variables). */
export const GEO_OPERATIONS = ['text', 'voice'] as const;
export type GeoOperation = (typeof GEO_OPERATIONS)[number];

/** `enforce`: a recipient outside the lists is refused. `monitor`: it is only counted and logged, and sent as usual. */
export const GEO_MODES = ['enforce', 'monitor'] as const;
export type GeoMode = (typeof GEO_MODES)[number];

/** The region of a number that belongs to none (libphonenumber's name for non-geographic entities, e.g. +800, +882). */
export const NON_GEOGRAPHIC_REGION = '001';

/**
 * Every region a parsed number can have: libphonenumber's 245 regions (the ISO 3166-1 alpha-2
 * codes of regions that have phone numbers, and the few codes it uses besides, such as AC, TA, XK)
 * and `001`. A list naming anything else names a region no recipient can be in: a configuration error.
 */
export const KNOWN_REGIONS: ReadonlySet<string> = new Set<string>([...getCountries(), NON_GEOGRAPHIC_REGION]);

/** Most entries in one region list (every known region fits, with room). */
export const MAX_GEO_REGIONS = 250;

/** One pair of lists. `allowed` undefined: every region is allowed; `denied` empty: none is denied. */
export interface RegionRules {
  /** ISO 3166-1 alpha-2 codes (or `001`), sorted, distinct. */
  readonly allowed?: readonly string[] | undefined;
  /** ISO 3166-1 alpha-2 codes (or `001`), sorted, distinct. */
  readonly denied?: readonly string[] | undefined;
}

export interface GeoPolicy {
  /** @defaultValue 'enforce' */
  readonly mode: GeoMode;
  /** For every operation (GEO_ALLOWED_REGIONS, GEO_DENIED_REGIONS). */
  readonly all: RegionRules;
  /** Text messages only (GEO_TEXT_ALLOWED_REGIONS, GEO_TEXT_DENIED_REGIONS). */
  readonly text: RegionRules;
  /** Voice codes only (GEO_VOICE_ALLOWED_REGIONS, GEO_VOICE_DENIED_REGIONS). */
  readonly voice: RegionRules;
}

/** As today: every region allowed, nothing denied. */
export const DEFAULT_GEO_POLICY = { mode: 'enforce', all: {}, text: {}, voice: {} } as const satisfies GeoPolicy;

/** The rule that refused a region: the variable that holds its list. */
export type GeoRule = `GEO_${'' | 'TEXT_' | 'VOICE_'}${'ALLOWED' | 'DENIED'}_REGIONS`;

export function geoRuleName(scope: 'all' | GeoOperation, kind: 'allowed' | 'denied'): GeoRule {
  const prefix = scope === 'all' ? '' : scope === 'text' ? 'TEXT_' : 'VOICE_';
  return `GEO_${prefix}${kind === 'allowed' ? 'ALLOWED' : 'DENIED'}_REGIONS`;
}

/** Result error code of a command refused by geo permissions alone. */
export const REGION_NOT_ALLOWED = 'REGION_NOT_ALLOWED';

/** One recipient outside the geo permissions (refused under `enforce`, only reported under `monitor`). */
export interface GeoRefusal {
  /** `operation.to[i]` (text) or `operation.to` (voice). */
  readonly field: string;
  readonly operation: GeoOperation;
  /** ISO 3166-1 alpha-2, or `001`. */
  readonly region: string;
  readonly rule: GeoRule;
}

/** Lists as sets, made once per list (the policy is built once at start-up). */
const SETS = new WeakMap<readonly string[], ReadonlySet<string>>();
function has(list: readonly string[], region: string): boolean {
  let set = SETS.get(list);
  if (set === undefined) {
    set = new Set(list);
    SETS.set(list, set);
  }
  return set.has(region);
}

/** True when no list is set: the check costs nothing then. */
export function geoUnrestricted(geo: GeoPolicy): boolean {
  const open = (rules: RegionRules): boolean => rules.allowed === undefined && (rules.denied === undefined || rules.denied.length === 0);
  return open(geo.all) && open(geo.text) && open(geo.voice);
}

/**
 * The first rule that refuses `region` for `operation`, or undefined when every list that applies
 * lets it through. Denials are checked before allowances (a denial is the more specific
 * statement), the common lists before the operation's.
 */
export function geoRuleRefusing(region: string, operation: GeoOperation, geo: GeoPolicy): GeoRule | undefined {
  const scopes = [
    ['all', geo.all],
    [operation, geo[operation]],
  ] as const;
  for (const [scope, rules] of scopes) {
    if (rules.denied !== undefined && has(rules.denied, region)) return geoRuleName(scope, 'denied');
  }
  for (const [scope, rules] of scopes) {
    if (rules.allowed !== undefined && !has(rules.allowed, region)) return geoRuleName(scope, 'allowed');
  }
  return undefined;
}
