import { describe, expect, it } from 'vitest';
import { accountsFor, parseRouting, ROUTING_LIMITS } from '../../src/accounts/routing.ts';

const ACCOUNTS = new Set(['default', 'backup', 'eu']);

function parsed(rules: unknown, fallback: string[] = ['default', 'backup']) {
  const problems: string[] = [];
  const routing = parseRouting(rules === undefined ? undefined : JSON.stringify(rules), fallback, ACCOUNTS, problems);
  return { routing, problems };
}

describe('routing: the first matching rule chooses the accounts, else ACCOUNT_FAILOVER', () => {
  const { routing, problems } = parsed([
    { operation: 'text', regions: ['AU', 'NZ'], accounts: ['backup', 'default'] },
    { priority: 'high', accounts: ['default', 'eu', 'backup'] },
    { operation: 'voice', accounts: ['default'] },
  ]);

  it('parses without problems', () => expect(problems).toEqual([]));

  it('matches on operation and regions: every region of the command must be in the rule', () => {
    expect(accountsFor(routing, { operation: 'sms.message.send', regions: ['AU'], priority: 'normal' })).toEqual(['backup', 'default']);
    expect(accountsFor(routing, { operation: 'sms.message.send', regions: ['AU', 'NZ'], priority: 'normal' })).toEqual(['backup', 'default']);
    // AU and CN in one call is not an AU command.
    expect(accountsFor(routing, { operation: 'sms.message.send', regions: ['AU', 'CN'], priority: 'normal' })).toEqual(['default', 'backup']);
    expect(accountsFor(routing, { operation: 'sms.voice.verification.send', regions: ['AU'], priority: 'normal' })).toEqual(['default']);
  });

  it('first match wins: an AU text at high priority takes the AU rule, a CN text at high the priority rule', () => {
    expect(accountsFor(routing, { operation: 'sms.message.send', regions: ['AU'], priority: 'high' })).toEqual(['backup', 'default']);
    expect(accountsFor(routing, { operation: 'sms.message.send', regions: ['CN'], priority: 'high' })).toEqual(['default', 'eu', 'backup']);
  });

  it('no rule: the fallback list', () => {
    expect(accountsFor(parsed(undefined).routing, { operation: 'sms.message.send', regions: ['CN'], priority: 'normal' })).toEqual(['default', 'backup']);
  });
});

describe('routing: validation names each problem, with the rule and the field', () => {
  it('an account that does not exist, named in a rule or in the fallback, and one named twice', () => {
    const { problems } = parsed([{ accounts: ['backup', 'nope'] }, { operation: 'voice', accounts: ['eu', 'eu'] }], ['default', 'gone']);
    expect(problems).toEqual([
      'ACCOUNT_FAILOVER: no account named "gone" (configured: default, backup, eu)',
      'ACCOUNT_ROUTES rule 1 accounts: no account named "nope" (configured: default, backup, eu)',
      'ACCOUNT_ROUTES rule 2 accounts: names "eu" twice (each account is tried at most once)',
    ]);
  });

  it('a rule that can never match: shadowed by an earlier rule that matches all it does', () => {
    const { problems } = parsed([
      { operation: 'text', regions: ['AU', 'NZ'], accounts: ['backup'] },
      { operation: 'text', regions: ['AU'], accounts: ['eu'] },
      { regions: ['NZ'], accounts: ['eu'] },
      { accounts: ['default'] },
      { priority: 'high', accounts: ['eu'] },
    ]);
    expect(problems).toEqual([
      'ACCOUNT_ROUTES rule 2: can never match: rule 1 matches every command it does, and comes first',
      'ACCOUNT_ROUTES rule 5: can never match: rule 4 matches every command it does, and comes first',
    ]);
  });

  it('bad fields: unknown operation, priority, region, an empty region list, no accounts, an unknown field, not JSON, too many rules', () => {
    expect(parsed([{ operation: 'fax', accounts: ['default'] }]).problems).toEqual(['ACCOUNT_ROUTES rule 1: operation must be one of text, voice']);
    expect(parsed([{ priority: 'urgent', accounts: ['default'] }]).problems).toEqual(['ACCOUNT_ROUTES rule 1: priority must be one of high, normal']);
    expect(parsed([{ regions: ['XX', 'au'], accounts: ['default'] }]).problems[0]).toContain('ACCOUNT_ROUTES rule 1: unknown regions "XX", "au"');
    expect(parsed([{ regions: [], accounts: ['default'] }]).problems[0]).toContain('an empty list would never match');
    expect(parsed([{ operation: 'text' }]).problems).toEqual(['ACCOUNT_ROUTES rule 1: accounts must be a list of account names']);
    expect(parsed([{ region: ['AU'], accounts: ['default'] }]).problems[0]).toBe(
      'ACCOUNT_ROUTES rule 1: unknown field "region" (known: operation, regions, priority, tenant, accounts)',
    );
    const problems: string[] = [];
    parseRouting('[{', ['default'], ACCOUNTS, problems);
    expect(problems[0]).toContain('ACCOUNT_ROUTES: is not JSON');
    const many = Array.from({ length: ROUTING_LIMITS.rules + 1 }, () => ({ accounts: ['default'] }));
    expect(parsed(many).problems).toEqual([`ACCOUNT_ROUTES: ${ROUTING_LIMITS.rules + 1} rules, at most ${ROUTING_LIMITS.rules}`]);
  });
});
