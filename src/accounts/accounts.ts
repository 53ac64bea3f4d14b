/**
 * The accounts of the messaging service the worker sends through. The PROVIDER_* settings are the
 * account `default`, as before; ACCOUNTS names more (another key of the same service, or the same
 * service at another base URL), each set by ACCOUNT_<NAME>_* variables. Pure but for the secret
 * files, which withSecretFiles reads (`ACCOUNT_<NAME>_ACCESS_KEY_ID_FILE`, `…_SECRET_FILE`).
 */
import { withSecretFiles } from '../config/secret-files.ts';
import { MAX_RATE_PER_SECOND } from '../worker/send/rate-limiter.ts';

/** The PROVIDER_* account's name: a label on results and metrics, never a secret. */
export const DEFAULT_ACCOUNT = 'default';
/** At most this many accounts in all (the default included): each has its own sockets, pauses and metric series. */
export const MAX_ACCOUNTS = 8;
const NAME = /^[a-z][a-z0-9-]{0,31}$/;

export interface AccountSettings {
  /** A label: on results, metrics and logs. */
  readonly name: string;
  readonly baseUrl: string;
  readonly accessKeyId: string;
  /** Given: HMAC-signed requests (as PROVIDER_ACCESS_KEY_SECRET); absent: the key id alone. */
  readonly accessKeySecret: string | undefined;
  /**
   * Calls per second through this account, deployment-wide like RATE_LIMIT_PER_SECOND (each
   * process takes its partitions' share); 0: none. RATE_LIMIT_PER_SECOND still caps all accounts
   * together. A command whose account has no token waits for one: a rate is not a refusal, so it
   * never fails over (docs/accounts.md).
   */
  readonly ratePerSecond: number;
}

/** The prefix of an account's variables: `backup-eu` → `ACCOUNT_BACKUP_EU_`. */
export function accountPrefix(name: string): string {
  return `ACCOUNT_${name.toUpperCase().replace(/-/g, '_')}_`;
}

/** The variables of one account (secrets first), for the unknown-variable check and the secret files. */
export function accountVariables(name: string): { readonly secrets: readonly string[]; readonly plain: readonly string[] } {
  const prefix = accountPrefix(name);
  return { secrets: [`${prefix}ACCESS_KEY_ID`, `${prefix}ACCESS_KEY_SECRET`], plain: [`${prefix}BASE_URL`, `${prefix}RATE_LIMIT_PER_SECOND`] };
}

/** The names in ACCOUNTS (not yet checked). */
export function declaredAccounts(env: NodeJS.ProcessEnv): string[] {
  const raw = env['ACCOUNTS']?.trim() ?? '';
  return raw === '' ? [] : raw.split(',').map((name) => name.trim());
}

/**
 * Every account: `default` (the PROVIDER_* one, given here) first, then those ACCOUNTS names, in
 * order. Each problem (a bad or repeated name, a missing key id, a base URL that is not one) is
 * appended naming the variable; a secret's value is never echoed.
 */
export function parseAccounts(env: NodeJS.ProcessEnv, primary: Omit<AccountSettings, 'name'>, problems: string[]): AccountSettings[] {
  const accounts: AccountSettings[] = [{ name: DEFAULT_ACCOUNT, ...primary }];
  const names = declaredAccounts(env);
  if (names.length + 1 > MAX_ACCOUNTS) {
    problems.push(`ACCOUNTS: ${names.length} accounts besides ${DEFAULT_ACCOUNT}, at most ${MAX_ACCOUNTS - 1}`);
    return accounts;
  }
  const seen = new Set([DEFAULT_ACCOUNT]);
  for (const name of names) {
    if (!NAME.test(name)) {
      problems.push(`ACCOUNTS: "${name.slice(0, 40)}" is not an account name (lower-case letters, digits and "-", starting with a letter, at most 32)`);
      continue;
    }
    if (seen.has(name)) {
      problems.push(`ACCOUNTS: "${name}" ${name === DEFAULT_ACCOUNT ? 'is the PROVIDER_* account already' : 'is named twice'}`);
      continue;
    }
    seen.add(name);
    const account = parseAccount(name, withSecretFiles(env, accountVariables(name).secrets, problems), primary.baseUrl, problems);
    if (account !== undefined) accounts.push(account);
  }
  return accounts;
}

function parseAccount(name: string, env: NodeJS.ProcessEnv, defaultBaseUrl: string, problems: string[]): AccountSettings | undefined {
  const prefix = accountPrefix(name);
  const before = problems.length;
  const accessKeyId = env[`${prefix}ACCESS_KEY_ID`]?.trim() ?? '';
  if (accessKeyId === '') problems.push(`${prefix}ACCESS_KEY_ID: is required for the account ${name} (or ${prefix}ACCESS_KEY_ID_FILE)`);
  const secret = env[`${prefix}ACCESS_KEY_SECRET`]?.trim() ?? '';
  const baseUrlGiven = env[`${prefix}BASE_URL`]?.trim() ?? '';
  let baseUrl = defaultBaseUrl;
  if (baseUrlGiven !== '') {
    if (!URL.canParse(baseUrlGiven) || !/^https?:$/.test(new URL(baseUrlGiven).protocol)) problems.push(`${prefix}BASE_URL: is not an http(s) URL`);
    else baseUrl = baseUrlGiven.replace(/\/+$/, '');
  }
  const ratePerSecond = parseAccountRate(`${prefix}RATE_LIMIT_PER_SECOND`, env[`${prefix}RATE_LIMIT_PER_SECOND`], problems);
  if (problems.length > before) return undefined;
  return { name, baseUrl, accessKeyId, accessKeySecret: secret === '' ? undefined : secret, ratePerSecond };
}

/** An account's rate limit (`PROVIDER_RATE_LIMIT_PER_SECOND` for `default`): a number from 0 (none) to MAX_RATE_PER_SECOND. */
export function parseAccountRate(variable: string, raw: string | undefined, problems: string[]): number {
  const text = raw?.trim() ?? '';
  if (text === '') return 0;
  const rate = Number(text);
  if (!Number.isFinite(rate) || rate < 0 || rate > MAX_RATE_PER_SECOND) {
    problems.push(`${variable}: must be a number from 0 (no limit) to ${MAX_RATE_PER_SECOND} calls per second (got "${text.slice(0, 20)}")`);
    return 0;
  }
  return rate;
}
