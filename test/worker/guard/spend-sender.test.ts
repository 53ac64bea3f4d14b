// The spend caps inside the GuardedSender, with the real client and sandbox (no mocks): what a
// send is charged is what the cap counts, an outcome that may have been charged counts its
// estimate, one surely not sent counts nothing.
import { describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../../helpers/fixtures.ts';
import { createProviderClient } from '../../../src/provider/client.ts';
import type { ProviderRequest } from '../../../src/provider/types.ts';
import { GuardedSender } from '../../../src/worker/send/guarded-sender.ts';
import { RateLimiter } from '../../../src/worker/send/rate-limiter.ts';
import { OutageCounter, ServiceGate } from '../../../src/worker/send/service-gate.ts';
import { SpendHolds } from '../../../src/worker/guard/spend-holds.ts';

const sandbox = useSandbox({}, { resetAfterEach: true });
const cleanups = useCleanups();
const TEXT: ProviderRequest = { operation: 'sms.message.send', body: { to: ['+8613800138000'], signature: 'Acme', content: 'Your code is 1234' } };
const FOOTPRINT = { operation: 'sms.message.send' as const, regions: ['CN'], costUnits: 1 };

function harness() {
  const client = createProviderClient({
    baseUrl: sandbox.url,
    accessKeyId: 'spend-sender-test',
    connectTimeoutMs: 500,
    responseTimeoutMs: 2_000,
    maxSockets: 4,
    retry: { maxAttempts: 1, budgetMs: 2_000, baseDelayMs: 5, maxDelayMs: 20, retryAmbiguous: false },
    random: () => 0.5,
  });
  cleanups.add(() => client.close());
  const gate = new ServiceGate({ backoff: { insufficient_funds: { initialMs: 20, maxMs: 50 }, circuit_open: { initialMs: 20, maxMs: 50 } } });
  cleanups.add(() => gate.close());
  const spent: bigint[] = [];
  const spend = new SpendHolds({
    settings: { caps: { hour: '100', day: undefined }, hourMs: 3_600_000 },
    observer: { onPause: () => undefined, onSpend: (s) => spent.push(s.hour.spent) },
  });
  const sender = new GuardedSender({ client, gate, outages: new OutageCounter(10), rateLimiter: new RateLimiter(0), fundsPolicy: 'pause', spend });
  const send = (id: string, request: ProviderRequest = TEXT) => sender.send(request, id, new AbortController().signal, null, undefined, FOOTPRINT);
  return { send, spent };
}

describe('GuardedSender with spend caps', () => {
  it('counts what the service charged; an answer lost after charging counts the estimate; a send surely not made counts nothing', async () => {
    const { send, spent } = harness();
    expect((await send('spend-1')).kind).toBe('sent');
    // CN: 0.045 a message, read exactly from the report.
    expect(spent.at(-1)).toBe(45_000n);
    // Charged, then the connection reset before the answer: it may have been charged, so its
    // estimate (the recent CN price) counts.
    sandbox.state.faults.enqueue('reset-after');
    expect((await send('spend-2')).kind).toBe('failed');
    expect(spent.at(-1)).toBe(90_000n);
    // A business error (an unknown template): answered, surely not sent, nothing counted.
    const unknownTemplate: ProviderRequest = {
      operation: 'sms.message.send',
      body: { to: ['+8613800138000'], signature: 'Acme', templateId: 'no_such_template' },
    };
    expect((await send('spend-3', unknownTemplate)).kind).toBe('failed');
    expect(spent.at(-1)).toBe(90_000n);
  });
});
