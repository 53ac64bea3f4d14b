/**
 * Which accounts a command may be sent through, in order: the first rule of ACCOUNT_ROUTES that
 * matches the command wins, else ACCOUNT_FAILOVER (the default list). Pure: parsed and validated
 * once at start-up, asked once per command.
 *
 * A rule matches on any of operation, destination regions, priority and tenant it names (one it leaves
 * out matches anything). Regions match when every region of the command is in the rule's list: a
 * command to AU and CN is not "an AU command", because one call carries all its recipients.
 */
import { KNOWN_REGIONS } from '../contracts/geo.ts';
import type { OperationName } from '../provider/types.ts';
import { PRIORITIES, type Priority } from '../worker/priority/priority.ts';
import { MAX_TENANT_CHARS } from '../worker/tenants/tenant-settings.ts';

/** At most this many rules, accounts per list and regions per rule: the table is read by people and checked per command. */
export const ROUTING_LIMITS = { rules: 64, accountsPerList: 8, regionsPerRule: 64 } as const;

/** The operations as rules name them. */
export type RouteOperation = 'text' | 'voice';
const OPERATIONS: readonly RouteOperation[] = ['text', 'voice'];

/** The rule's name of a service operation. */
export function routeOperation(operation: OperationName): RouteOperation {
  return operation === 'sms.message.send' ? 'text' : 'voice';
}

export interface RoutingRule {
  readonly operation?: RouteOperation;
  /** ISO 3166 alpha-2 codes (001: non-geographic); every region of the command must be one of them. */
  readonly regions?: ReadonlySet<string>;
  readonly priority?: Priority;
  /** The command's tenant (TENANT_METADATA_KEY). */
  readonly tenant?: string;
  /** The accounts to try, in order, each at most once. */
  readonly accounts: readonly string[];
}

export interface Routing {
  readonly rules: readonly RoutingRule[];
  /** The list for a command no rule matches. */
  readonly fallback: readonly string[];
}

/** What routing knows of a command. */
export interface RoutedCommand {
  readonly operation: OperationName;
  readonly regions: readonly string[];
  readonly priority: Priority;
  readonly tenant?: string | undefined;
}

/** The command's accounts, in the order they are tried. */
export function accountsFor(routing: Routing, command: RoutedCommand): readonly string[] {
  for (const rule of routing.rules) if (matches(rule, command)) return rule.accounts;
  return routing.fallback;
}

function matches(rule: RoutingRule, command: RoutedCommand): boolean {
  if (rule.operation !== undefined && rule.operation !== routeOperation(command.operation)) return false;
  if (rule.priority !== undefined && rule.priority !== command.priority) return false;
  if (rule.tenant !== undefined && rule.tenant !== command.tenant) return false;
  if (rule.regions !== undefined) {
    if (command.regions.length === 0) return false;
    for (const region of command.regions) if (!rule.regions.has(region)) return false;
  }
  return true;
}

/**
 * Parses ACCOUNT_ROUTES (a JSON array of rules) against the configured account names; every
 * problem is appended to `problems` naming the variable, the rule (1-based) and the field.
 */
export function parseRouting(rulesJson: string | undefined, fallback: readonly string[], accounts: ReadonlySet<string>, problems: string[]): Routing {
  checkList('ACCOUNT_FAILOVER', fallback, accounts, problems);
  if (rulesJson === undefined || rulesJson.trim() === '') return { rules: [], fallback };
  let raw: unknown;
  try {
    raw = JSON.parse(rulesJson);
  } catch {
    problems.push('ACCOUNT_ROUTES: is not JSON (a JSON array of rules, e.g. [{"operation":"text","regions":["AU"],"accounts":["backup"]}])');
    return { rules: [], fallback };
  }
  if (!Array.isArray(raw)) {
    problems.push('ACCOUNT_ROUTES: must be a JSON array of rules');
    return { rules: [], fallback };
  }
  if (raw.length > ROUTING_LIMITS.rules) {
    problems.push(`ACCOUNT_ROUTES: ${raw.length} rules, at most ${ROUTING_LIMITS.rules}`);
    return { rules: [], fallback };
  }
  const rules: RoutingRule[] = [];
  raw.forEach((item: unknown, index) => {
    const rule = parseRule(item, `ACCOUNT_ROUTES rule ${index + 1}`, accounts, problems);
    if (rule === undefined) return;
    const shadow = rules.findIndex((earlier) => covers(earlier, rule));
    if (shadow >= 0) problems.push(`ACCOUNT_ROUTES rule ${index + 1}: can never match: rule ${shadow + 1} matches every command it does, and comes first`);
    rules.push(rule);
  });
  return { rules, fallback };
}

const RULE_FIELDS = new Set(['operation', 'regions', 'priority', 'tenant', 'accounts']);

function parseRule(item: unknown, where: string, accounts: ReadonlySet<string>, problems: string[]): RoutingRule | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    problems.push(`${where}: must be an object with accounts and any of operation, regions, priority, tenant`);
    return undefined;
  }
  const fields = item as Record<string, unknown>;
  const before = problems.length;
  for (const key of Object.keys(fields))
    if (!RULE_FIELDS.has(key)) problems.push(`${where}: unknown field "${key.slice(0, 40)}" (known: ${[...RULE_FIELDS].join(', ')})`);
  const { operation, regions, priority, tenant } = fields;
  if (tenant !== undefined && (typeof tenant !== 'string' || tenant.trim() === '' || tenant.length > MAX_TENANT_CHARS))
    problems.push(`${where}: tenant must be a tenant name (1 to ${MAX_TENANT_CHARS} characters)`);
  if (operation !== undefined && !OPERATIONS.includes(operation as RouteOperation))
    problems.push(`${where}: operation must be one of ${OPERATIONS.join(', ')}`);
  if (priority !== undefined && !PRIORITIES.includes(priority as Priority)) problems.push(`${where}: priority must be one of ${PRIORITIES.join(', ')}`);
  const regionSet = regions === undefined ? undefined : parseRegions(regions, where, problems);
  const list = Array.isArray(fields['accounts']) && fields['accounts'].every((a) => typeof a === 'string') ? (fields['accounts'] as string[]) : undefined;
  if (list === undefined) problems.push(`${where}: accounts must be a list of account names`);
  else checkList(`${where} accounts`, list, accounts, problems);
  if (problems.length > before || list === undefined) return undefined;
  return {
    ...(operation === undefined ? {} : { operation: operation as RouteOperation }),
    ...(regionSet === undefined ? {} : { regions: regionSet }),
    ...(priority === undefined ? {} : { priority: priority as Priority }),
    ...(tenant === undefined ? {} : { tenant: tenant as string }),
    accounts: list,
  };
}

function parseRegions(regions: unknown, where: string, problems: string[]): ReadonlySet<string> | undefined {
  if (!Array.isArray(regions) || regions.length === 0 || !regions.every((r) => typeof r === 'string')) {
    problems.push(`${where}: regions must be a non-empty list of ISO 3166 alpha-2 codes (an empty list would never match)`);
    return undefined;
  }
  if (regions.length > ROUTING_LIMITS.regionsPerRule) {
    problems.push(`${where}: ${regions.length} regions, at most ${ROUTING_LIMITS.regionsPerRule}`);
    return undefined;
  }
  const unknown = (regions as string[]).filter((r) => !KNOWN_REGIONS.has(r));
  if (unknown.length > 0) {
    problems.push(
      `${where}: unknown region${unknown.length > 1 ? 's' : ''} ${unknown
        .slice(0, 5)
        .map((r) => JSON.stringify(r.slice(0, 8)))
        .join(', ')} (ISO 3166 alpha-2, upper case; 001 for non-geographic)`,
    );
    return undefined;
  }
  return new Set(regions as string[]);
}

function checkList(where: string, list: readonly string[], accounts: ReadonlySet<string>, problems: string[]): void {
  if (list.length === 0) problems.push(`${where}: names no account`);
  if (list.length > ROUTING_LIMITS.accountsPerList) problems.push(`${where}: ${list.length} accounts, at most ${ROUTING_LIMITS.accountsPerList}`);
  const seen = new Set<string>();
  for (const name of list) {
    if (!accounts.has(name)) problems.push(`${where}: no account named "${name.slice(0, 40)}" (configured: ${[...accounts].join(', ')})`);
    else if (seen.has(name)) problems.push(`${where}: names "${name}" twice (each account is tried at most once)`);
    seen.add(name);
  }
}

/** Every command `later` matches, `earlier` matches too. */
function covers(earlier: RoutingRule, later: RoutingRule): boolean {
  if (earlier.operation !== undefined && earlier.operation !== later.operation) return false;
  if (earlier.priority !== undefined && earlier.priority !== later.priority) return false;
  if (earlier.tenant !== undefined && earlier.tenant !== later.tenant) return false;
  if (earlier.regions !== undefined) {
    if (later.regions === undefined) return false;
    for (const region of later.regions) if (!earlier.regions.has(region)) return false;
  }
  return true;
}
