// FailoverSender over two accounts' GuardedSenders, each with its own client, gate and holds,
// against two sandboxes on loopback (the second with an AU route the first lacks).
import { describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../../src/sandbox/index.ts';
import { useCleanups, useSandbox } from '../../helpers/fixtures.ts';
import { createProviderClient } from '../../../src/provider/client.ts';
import type { ProviderRequest } from '../../../src/provider/types.ts';
import type { SendFootprint } from '../../../src/contracts/validate.ts';
import { GuardedSender } from '../../../src/worker/send/guarded-sender.ts';
import { FailoverSender } from '../../../src/worker/send/failover-sender.ts';
import { RateLimiter } from '../../../src/worker/send/rate-limiter.ts';
import { RefusalHolds } from '../../../src/worker/send/refusal-holds.ts';
import { DEFAULT_REFUSAL_SCOPE_SETTINGS } from '../../../src/worker/send/refusal-scopes.ts';
import { OutageCounter, ServiceGate, type GateBackoffs } from '../../../src/worker/send/service-gate.ts';
import type { Routing } from '../../../src/accounts/routing.ts';
import type { RoutedOutcome } from '../../../src/worker/send/send-outcome.ts';

const primarySandbox = useSandbox({}, { resetAfterEach: true });
const cleanups = useCleanups();

const NO_PROBES: GateBackoffs = { insufficient_funds: { initialMs: 600_000, maxMs: 600_000 }, circuit_open: { initialMs: 600_000, maxMs: 600_000 } };
const FAST_PROBES: GateBackoffs = { insufficient_funds: { initialMs: 20, maxMs: 50 }, circuit_open: { initialMs: 20, maxMs: 50 } };

const TO_AU: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+61412345678'], signature: 'Acme', content: 'Your code is 1234' } };
const TO_CN: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+8613800138000'], signature: 'Acme', content: 'Your code is 1234' } };
const AU_FOOTPRINT: SendFootprint = { operation: 'sms.message.send', regions: ['AU'], costUnits: 1 };
const CN_FOOTPRINT: SendFootprint = { operation: 'sms.message.send', regions: ['CN'], costUnits: 1 };

let seq = 0;
const correlationId = (): string => `fs-${(seq += 1)}-${Math.random().toString(36).slice(2, 8)}`;

function account(name: string, url: string, backoff: GateBackoffs): { sender: GuardedSender; gate: ServiceGate } {
  const client = createProviderClient({
    baseUrl: url,
    accessKeyId: 'failover-test',
    connectTimeoutMs: 500,
    responseTimeoutMs: 2_000,
    maxSockets: 8,
    retry: { maxAttempts: 1, budgetMs: 2_000, baseDelayMs: 5, maxDelayMs: 20, retryAmbiguous: false },
    random: () => 0.5,
  });
  cleanups.add(() => client.close());
  const gate = new ServiceGate({ backoff });
  cleanups.add(() => gate.close());
  const holds = new RefusalHolds({ settings: DEFAULT_REFUSAL_SCOPE_SETTINGS });
  cleanups.add(() => holds.close());
  const sender = new GuardedSender({
    account: name,
    client,
    gate,
    holds,
    outages: new OutageCounter(10),
    rateLimiter: new RateLimiter(0),
    fundsPolicy: 'pause',
  });
  return { sender, gate };
}

async function rig(routing: Routing, backoff: GateBackoffs = NO_PROBES) {
  const backupSandbox: RunningSandbox = await startSandbox({ port: 0, textRoutes: { AU: { upstream: 'au.backup', price: '0.090000' } } });
  cleanups.add(() => backupSandbox.close());
  const primary = account('primary', primarySandbox.url, backoff);
  const backup = account('backup', backupSandbox.url, backoff);
  const sender = new FailoverSender({
    accounts: new Map([
      ['primary', primary.sender],
      ['backup', backup.sender],
    ]),
    routing,
    priority: 'normal',
  });
  return { sender, primary, backup, backupSandbox };
}

const BOTH: Routing = { rules: [], fallback: ['primary', 'backup'] };

describe('FailoverSender', () => {
  it('a refused route on the first account: its mark is withdrawn before the next account takes one, each mark naming its account; SENT through backup', async () => {
    const { sender, backupSandbox } = await rig(BOTH);
    const id = correlationId();
    const events: string[] = [];
    const hooks = {
      beforeSend: async (_signal: AbortSignal, name?: string) => {
        events.push(`mark(${name})`);
        return true;
      },
      kept: (reached: boolean) => events.push(`kept(${reached})`),
    };
    const outcome = await sender.send(TO_AU, id, new AbortController().signal, null, hooks, AU_FOOTPRINT);
    expect(outcome).toMatchObject({ kind: 'sent', account: 'backup', failovers: [{ account: 'primary', reason: 'no-route', code: '101301' }] });
    expect(events).toEqual(['mark(primary)', 'kept(false)', 'mark(backup)']);
    expect(primarySandbox.state.requests({ correlationId: id })).toHaveLength(1);
    expect(backupSandbox.state.acceptedSends(id)).toBe(1);
  });

  it('a paused first account declines without a call (reason paused, the pause named)', async () => {
    const { sender, primary, backupSandbox } = await rig(BOTH);
    primary.gate.block('insufficient_funds', false);
    const id = correlationId();
    const outcome = await sender.send(TO_CN, id, new AbortController().signal, null, undefined, CN_FOOTPRINT);
    expect(outcome).toMatchObject({ kind: 'sent', account: 'backup', failovers: [{ account: 'primary', reason: 'paused', code: 'insufficient_funds' }] });
    expect(primarySandbox.state.requests({ correlationId: id })).toHaveLength(0);
    expect(backupSandbox.state.acceptedSends(id)).toBe(1);
  });

  it('a paused account still gets its probe: when one is due, the command tries it first (and clears the pause when it goes through)', async () => {
    const { sender, primary, backupSandbox } = await rig(BOTH, FAST_PROBES);
    primary.gate.block('insufficient_funds', false);
    await new Promise((resolve) => setTimeout(resolve, 40));
    const id = correlationId();
    const outcome = await sender.send(TO_CN, id, new AbortController().signal, null, undefined, CN_FOOTPRINT);
    expect(outcome).toMatchObject({ kind: 'sent', account: 'primary', failovers: [] });
    expect(primary.gate.reason).toBeUndefined();
    expect(backupSandbox.state.requests({ correlationId: id })).toHaveLength(0);
  });

  it('the last account of a list holds the command while it is paused, as one account does, and sends it once the pause lifts', async () => {
    const { sender, primary } = await rig({ rules: [], fallback: ['primary'] });
    primary.gate.block('insufficient_funds', false);
    const id = correlationId();
    let outcome: RoutedOutcome | undefined;
    const sending = sender.send(TO_CN, id, new AbortController().signal, null, undefined, CN_FOOTPRINT).then((o) => (outcome = o));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(outcome).toBeUndefined();
    primary.gate.clear();
    await sending;
    expect(outcome).toMatchObject({ kind: 'sent', account: 'primary', failovers: [] });
  });

  it('an answer that may have been a send (HTTP 500) ends the command there: UNKNOWN material, backup never called', async () => {
    const { sender, backupSandbox } = await rig(BOTH);
    primarySandbox.setFaults({ enqueue: [{ kind: 'http500', count: 1 }] });
    const id = correlationId();
    const outcome = await sender.send(TO_CN, id, new AbortController().signal, null, undefined, CN_FOOTPRINT);
    expect(outcome).toMatchObject({ kind: 'failed', account: 'primary', failovers: [] });
    expect(outcome.kind === 'failed' && 'ambiguous' in outcome.error && outcome.error.ambiguous).toBe(true);
    expect(backupSandbox.state.requests({ correlationId: id })).toHaveLength(0);
  });
});
