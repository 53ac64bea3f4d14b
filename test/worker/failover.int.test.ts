// Several accounts end to end (real broker, registry and HTTP on loopback): two sandboxes stand for
// two accounts of the service: `default` (the PROVIDER_* one, no AU route) and `backup` (its own
// key, base URL and an AU route). A command goes on to its next account only when its account
// proved it did not send it; after an answer that may have been a send it stays UNKNOWN there.
import { describe, expect, it } from 'vitest';
import type { CommandResult } from '../../src/contracts/result.ts';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/index.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { eventually } from '../helpers/kafka.ts';
import { refusingService } from '../helpers/provider.ts';
import { freePort } from '../../tools/stack/processes.ts';
import { startWorkerRig, textCommand } from '../helpers/worker.ts';

const primary = useSandbox({}, { resetAfterEach: true });
const cleanups = useCleanups();

const AU = '+61412345678';
const CN = '+8613800138000';

async function backupSandbox(): Promise<RunningSandbox> {
  const backup = await startSandbox({ port: 0, accessKeyId: 'backup-key', textRoutes: { AU: { upstream: 'au.backup', price: '0.090000' } } });
  cleanups.add(() => backup.close());
  return backup;
}

function backupAccount(backup: RunningSandbox, overrides: Record<string, string> = {}): Record<string, string> {
  return { ACCOUNTS: 'backup', ACCOUNT_BACKUP_BASE_URL: backup.url, ACCOUNT_BACKUP_ACCESS_KEY_ID: 'backup-key', ...overrides };
}

/** Accepted sends of a command over both accounts: exactly one account is charged per command. */
function charged(id: string, ...sandboxes: { state: RunningSandbox['state'] }[]): number {
  return sandboxes.reduce((sum, s) => sum + s.state.acceptedSends(id), 0);
}

function only(result: CommandResult | undefined): CommandResult {
  if (result === undefined) throw new Error('no result');
  return result;
}

describe('worker: several accounts, failover only on proof of not-sent', () => {
  it('an AU text refused 101301 on default is SENT through backup, naming both; a CN text is SENT through default alone; the metrics name each account', async () => {
    const backup = await backupSandbox();
    const { worker, results, publish } = await startWorkerRig(primary.url, cleanups, backupAccount(backup));
    const au = textCommand({ to: [AU] });
    const cn = textCommand({ to: [CN] });
    await publish([{ command: au }, { command: cn }]);
    const got = await results.waitFor([au.commandId, cn.commandId]);
    const auResult = only(got.get(au.commandId));
    expect(auResult.outcome).toBe('SENT');
    expect(auResult.account).toBe('backup');
    expect(auResult.failovers).toEqual([{ account: 'default', reason: 'no-route', code: '101301', message: expect.stringContaining('101301') }]);
    expect(auResult.messages[0]?.upstream).toBe('au.backup');
    expect(primary.state.requests({ correlationId: au.commandId })).toHaveLength(1);
    expect(charged(au.commandId, primary, backup)).toBe(1);
    const cnResult = only(got.get(cn.commandId));
    expect(cnResult.outcome).toBe('SENT');
    expect(cnResult.account).toBe('default');
    expect(cnResult.failovers).toBeUndefined();
    expect(backup.state.requests({ correlationId: cn.commandId })).toHaveLength(0);
    expect(charged(cn.commandId, primary, backup)).toBe(1);
    // The metrics name the account: the refusal and the paused route on default, the calls and the charge of each.
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^sms_worker_refusals_total\{account="default",code="101301",scope="route"\} 1$/m);
    expect(metrics).toMatch(/^sms_worker_paused_routes\{account="default"\} 1$/m);
    expect(metrics).toMatch(/^sms_worker_paused_routes\{account="backup"\} 0$/m);
    expect(metrics).toMatch(/^sms_worker_route_paused_since_timestamp_seconds\{account="default",operation="text",region="AU"\} \d/m);
    expect(metrics).toMatch(/^sms_worker_provider_requests_total\{account="backup",operation="sms.message.send",outcome="success"\} 1$/m);
    expect(metrics).toMatch(/^sms_worker_provider_requests_total\{account="default",operation="sms.message.send",outcome="success"\} 1$/m);
    expect(metrics).toMatch(/^sms_worker_charged_amount_micros_total\{account="backup",region="AU",upstream="au.backup"\} 90000$/m);
    expect(metrics).not.toMatch(/^sms_worker_charged_amount_micros_total\{account="backup",region="CN"/m);
  });

  it('one service, two keys: backup at the same base URL (ACCOUNT_BACKUP_BASE_URL unset), told apart by its key; the AU text is charged to backup alone', async () => {
    const service = await startSandbox({
      port: 0,
      accounts: [{ accessKeyId: 'backup-key', textRoutes: { AU: { upstream: 'au.backup', price: '0.090000' } } }],
    });
    cleanups.add(() => service.close());
    const backup = service.accounts.get('backup-key');
    if (backup === undefined) throw new Error('no backup account');
    const { results, publish } = await startWorkerRig(service.url, cleanups, { ACCOUNTS: 'backup', ACCOUNT_BACKUP_ACCESS_KEY_ID: 'backup-key' });
    const au = textCommand({ to: [AU] });
    await publish([{ command: au }]);
    const result = only((await results.waitFor([au.commandId])).get(au.commandId));
    expect(result).toMatchObject({ outcome: 'SENT', account: 'backup', failovers: [{ account: 'default', reason: 'no-route', code: '101301' }] });
    expect(service.state.requests({ correlationId: au.commandId })).toHaveLength(1);
    expect(service.state.acceptedSends(au.commandId)).toBe(0);
    expect(backup.state.acceptedSends(au.commandId)).toBe(1);
  });

  it('default runs out of money: the rest go through backup (reason funds), each charged to exactly one account, none FAILED', async () => {
    const backup = await backupSandbox();
    const { results, publish } = await startWorkerRig(primary.url, cleanups, backupAccount(backup));
    const before = Array.from({ length: 10 }, () => textCommand({ to: [CN] }));
    await publish(before.map((command) => ({ command })));
    await results.waitFor(before.map((c) => c.commandId));
    primary.state.setBalance('0.000000');
    const after = Array.from({ length: 20 }, () => textCommand({ to: [CN] }));
    await publish(after.map((command) => ({ command })));
    const got = await results.waitFor(after.map((c) => c.commandId));
    for (const command of after) {
      const result = only(got.get(command.commandId));
      expect(result.outcome, command.commandId).toBe('SENT');
      expect(result.account, command.commandId).toBe('backup');
      expect(charged(command.commandId, primary, backup), command.commandId).toBe(1);
      // Refused for its funds on default, or default was already paused for them: never a call that may have sent it.
      for (const step of result.failovers ?? []) expect(step.account).toBe('default');
      expect(result.failovers?.[0]?.reason === 'funds' || result.failovers?.[0]?.reason === 'paused', command.commandId).toBe(true);
    }
    expect(after.some((c) => got.get(c.commandId)?.failovers?.[0]?.reason === 'funds')).toBe(true);
    // The account-wide funds pause of default does not stop the worker: backup keeps sending.
    expect(primary.state.balance).toBe('0.000000');
  });

  it("an account's own rate limit paces its calls alone: backup at 2/s, default (no limit of its own) unpaced", async () => {
    const backup = await backupSandbox();
    const { results, publish } = await startWorkerRig(primary.url, cleanups, backupAccount(backup, { ACCOUNT_BACKUP_RATE_LIMIT_PER_SECOND: '2' }));
    const au = Array.from({ length: 6 }, () => textCommand({ to: [AU] }));
    const cn = Array.from({ length: 6 }, () => textCommand({ to: [CN] }));
    await publish([...au, ...cn].map((command) => ({ command })));
    const got = await results.waitFor([...au, ...cn].map((c) => c.commandId));
    for (const command of au) expect(got.get(command.commandId)?.account).toBe('backup');
    for (const command of cn) expect(got.get(command.commandId)?.account).toBe('default');
    const span = (times: number[]): number => Math.max(...times) - Math.min(...times);
    // 6 calls at 2/s from an empty bucket (a share starts empty): 500 ms apart, 2.5 s from the first to the last.
    const backupTimes = backup.state.requests().map((r) => r.receivedAt);
    expect(backupTimes).toHaveLength(6);
    expect(span(backupTimes)).toBeGreaterThanOrEqual(2_000);
    // The AU commands' refused calls to default are not paced by backup's limit.
    const cnTimes = cn.flatMap((c) => primary.state.requests({ correlationId: c.commandId }).map((r) => r.receivedAt));
    expect(cnTimes).toHaveLength(6);
    expect(span(cnTimes)).toBeLessThan(2_000);
  });

  it.each([
    ['reset-after', 'a reset after processing'],
    ['http500', 'HTTP 500 without an envelope'],
    ['malformed', 'a malformed answer'],
    ['hang-after', 'no answer within the response timeout'],
  ] as const)('an answer after which default may have sent it (%s: %s) stays UNKNOWN on default: backup never sees it', async (kind, _what) => {
    const backup = await backupSandbox();
    const { results, publish } = await startWorkerRig(primary.url, cleanups, backupAccount(backup));
    primary.setFaults({ enqueue: [{ kind, count: 1 }] });
    const command = textCommand({ to: [CN] });
    await publish([{ command }]);
    const result = only((await results.waitFor([command.commandId])).get(command.commandId));
    expect(result.outcome).toBe('UNKNOWN');
    expect(result.account).toBe('default');
    expect(result.failovers).toBeUndefined();
    expect(primary.state.requests({ correlationId: command.commandId })).toHaveLength(1);
    expect(backup.state.requests({ correlationId: command.commandId })).toHaveLength(0);
  });

  it('default refuses this client (401 without an envelope): the command is SENT through backup (reason refused-client); default is paused, backup is not', async () => {
    const backup = await backupSandbox();
    const refusing = await refusingService();
    cleanups.add(() => refusing.close());
    const { worker, results, publish } = await startWorkerRig(refusing.url, cleanups, backupAccount(backup));
    const commands = Array.from({ length: 3 }, () => textCommand({ to: [CN] }));
    await publish(commands.map((command) => ({ command })));
    const got = await results.waitFor(commands.map((c) => c.commandId));
    for (const command of commands) {
      const result = only(got.get(command.commandId));
      expect(result.outcome).toBe('SENT');
      expect(result.account).toBe('backup');
      expect(['refused-client', 'paused']).toContain(result.failovers?.[0]?.reason);
      expect(charged(command.commandId, backup)).toBe(1);
    }
    expect(refusing.requests()).toBeGreaterThanOrEqual(1);
    // default's gate (the worker's pause reason) is closed; sending through backup never paused.
    await eventually(() => (worker.pauseReason === 'provider_rejecting' ? true : undefined), 10_000, 'default paused');
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^sms_worker_account_paused\{account="default",reason="provider_rejecting"\} 1$/m);
    expect(metrics).not.toMatch(/^sms_worker_account_paused\{account="backup",[^}]*\} 1$/m);
    expect(metrics).toMatch(/^sms_worker_failovers_total\{account="default",reason="(refused-client|paused)"\} [1-9]/m);
  });

  it('default unreachable (nothing listens at its URL): the command is SENT through backup (reason unreachable)', async () => {
    const backup = await backupSandbox();
    const closed = `http://127.0.0.1:${await freePort()}`;
    const { results, publish } = await startWorkerRig(closed, cleanups, backupAccount(backup));
    const command = textCommand({ to: [CN] });
    await publish([{ command }]);
    const result = only((await results.waitFor([command.commandId])).get(command.commandId));
    expect(result.outcome).toBe('SENT');
    expect(result.account).toBe('backup');
    expect(result.failovers?.[0]).toMatchObject({ account: 'default', reason: 'unreachable' });
    expect(charged(command.commandId, backup)).toBe(1);
  });

  it('ACCOUNT_ROUTES sends AU texts through backup first: no request to default for them', async () => {
    const backup = await backupSandbox();
    const { results, publish } = await startWorkerRig(
      primary.url,
      cleanups,
      backupAccount(backup, { ACCOUNT_ROUTES: JSON.stringify([{ operation: 'text', regions: ['AU'], accounts: ['backup', 'default'] }]) }),
    );
    const au = textCommand({ to: [AU] });
    await publish([{ command: au }]);
    const result = only((await results.waitFor([au.commandId])).get(au.commandId));
    expect(result.outcome).toBe('SENT');
    expect(result.account).toBe('backup');
    expect(result.failovers).toBeUndefined();
    expect(primary.state.requests({ correlationId: au.commandId })).toHaveLength(0);
  });
});
