import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, unknownSettings } from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors.ts';

const BASE = {
  KAFKA_BROKERS: 'localhost:9092',
  SCHEMA_REGISTRY_URL: 'http://localhost:8081',
  PROVIDER_BASE_URL: 'https://uni.example.test',
  PROVIDER_ACCESS_KEY_ID: 'AKID-PRIMARY',
};

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...BASE, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('accounts: PROVIDER_* is `default`; ACCOUNTS names more, each from ACCOUNT_<NAME>_*', () => {
  it('one account without ACCOUNTS, as before; its routing is the default list alone', () => {
    const config = loadConfig(BASE);
    expect(config.accounts).toEqual([
      { name: 'default', baseUrl: 'https://uni.example.test', accessKeyId: 'AKID-PRIMARY', accessKeySecret: undefined, ratePerSecond: 0 },
    ]);
    expect(config.routing).toEqual({ rules: [], fallback: ['default'] });
  });

  it('more accounts, in order, a base URL of their own or PROVIDER_BASE_URL, a secret from a file; the fallback list is all of them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sms-worker-accounts-'));
    writeFileSync(join(dir, 'secret'), 'EU-SECRET\n');
    const config = loadConfig({
      ...BASE,
      ACCOUNTS: 'backup, eu-2',
      ACCOUNT_BACKUP_ACCESS_KEY_ID: 'AKID-BACKUP',
      ACCOUNT_BACKUP_BASE_URL: 'https://backup.example.test/',
      ACCOUNT_EU_2_ACCESS_KEY_ID: 'AKID-EU',
      ACCOUNT_EU_2_ACCESS_KEY_SECRET_FILE: join(dir, 'secret'),
    });
    expect(config.accounts.map((a) => [a.name, a.baseUrl, a.accessKeyId, a.accessKeySecret])).toEqual([
      ['default', 'https://uni.example.test', 'AKID-PRIMARY', undefined],
      ['backup', 'https://backup.example.test', 'AKID-BACKUP', undefined],
      ['eu-2', 'https://uni.example.test', 'AKID-EU', 'EU-SECRET'],
    ]);
    expect(config.routing.fallback).toEqual(['default', 'backup', 'eu-2']);
  });

  it('lists every problem: a bad name, a repeat, `default` again, a missing key id, a bad URL, an unknown account in ACCOUNT_FAILOVER; never a secret', () => {
    const problems = problemsOf({
      ACCOUNTS: 'Backup,eu,eu,default,asia',
      ACCOUNT_EU_ACCESS_KEY_SECRET: 'EU-SECRET-VALUE',
      ACCOUNT_ASIA_ACCESS_KEY_ID: 'AKID-ASIA',
      ACCOUNT_ASIA_BASE_URL: 'ftp://asia',
      ACCOUNT_FAILOVER: 'asia,default,moon',
    });
    expect(problems).toEqual([
      'ACCOUNTS: "Backup" is not an account name (lower-case letters, digits and "-", starting with a letter, at most 32)',
      'ACCOUNT_EU_ACCESS_KEY_ID: is required for the account eu (or ACCOUNT_EU_ACCESS_KEY_ID_FILE)',
      'ACCOUNTS: "eu" is named twice',
      'ACCOUNTS: "default" is the PROVIDER_* account already',
      'ACCOUNT_ASIA_BASE_URL: is not an http(s) URL',
      'ACCOUNT_FAILOVER: no account named "asia" (configured: default)',
      'ACCOUNT_FAILOVER: no account named "moon" (configured: default)',
    ]);
    expect(problems.join('\n')).not.toContain('EU-SECRET-VALUE');
  });

  it('each account may have a rate limit of its own (PROVIDER_RATE_LIMIT_PER_SECOND for default); a bad one is named', () => {
    const config = loadConfig({
      ...BASE,
      PROVIDER_RATE_LIMIT_PER_SECOND: '20',
      ACCOUNTS: 'backup,eu',
      ACCOUNT_BACKUP_ACCESS_KEY_ID: 'AKID-BACKUP',
      ACCOUNT_BACKUP_RATE_LIMIT_PER_SECOND: '2.5',
      ACCOUNT_EU_ACCESS_KEY_ID: 'AKID-EU',
    });
    expect(config.accounts.map((a) => [a.name, a.ratePerSecond])).toEqual([
      ['default', 20],
      ['backup', 2.5],
      ['eu', 0],
    ]);
    expect(
      problemsOf({ PROVIDER_RATE_LIMIT_PER_SECOND: '-1', ACCOUNTS: 'backup', ACCOUNT_BACKUP_ACCESS_KEY_ID: 'x', ACCOUNT_BACKUP_RATE_LIMIT_PER_SECOND: 'fast' }),
    ).toEqual([
      'PROVIDER_RATE_LIMIT_PER_SECOND: must be a number from 0 (no limit) to 100000 calls per second (got "-1")',
      'ACCOUNT_BACKUP_RATE_LIMIT_PER_SECOND: must be a number from 0 (no limit) to 100000 calls per second (got "fast")',
    ]);
  });

  it('knows the variables of the accounts ACCOUNTS names (no misspelling warning for them), and still flags a misspelt one', () => {
    const env = {
      ...BASE,
      ACCOUNTS: 'backup',
      ACCOUNT_BACKUP_ACCESS_KEY_ID: 'x',
      ACCOUNT_BACKUP_BASE_URL: 'https://b.test',
      ACCOUNT_BACKUP_ACCESS_KEY_SECRET_FILE: '/s',
      ACCOUNT_BACKUP_RATE_LIMIT_PER_SECOND: '5',
      PROVIDER_RATE_LIMIT_PER_SECOND: '5',
      ACCOUNT_BACKUP_ACCESS_KEY_IDD: 'y',
    };
    expect(unknownSettings(env).map((u) => u.name)).toEqual(['ACCOUNT_BACKUP_ACCESS_KEY_IDD']);
  });
});
