/**
 * sms_worker_time_to_send_seconds: from a command record's Kafka timestamp to the start of the
 * first call to the service for it, and sms_worker_send_stage_seconds, the same time in its
 * stages. The pure arithmetic, the once-per-command hook, and handleRecord observing both on the
 * worker's registry, with a scripted service client and the real Avro encoding behind a codec
 * double (no broker, no registry).
 */
import { describe, expect, it } from 'vitest';
import { commandType } from '../../src/contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../../src/contracts/command.ts';
import { DEFAULT_VALIDATION_POLICY } from '../../src/contracts/index.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import type { ProviderClient, ProviderRequest, ProviderSuccess } from '../../src/provider/types.ts';
import { GuardedSender } from '../../src/worker/send/guarded-sender.ts';
import { RateLimiter } from '../../src/worker/send/rate-limiter.ts';
import { handleRecord, type CommandRecord } from '../../src/worker/send/record-handler.ts';
import { OutageCounter, ServiceGate } from '../../src/worker/send/service-gate.ts';
import { firstCallOnly, SendStageClock, timeToSendSeconds } from '../../src/worker/time-to-send.ts';
import type { RecordLane } from '../../src/worker/send/record-handler.ts';
import type { TokenSource } from '../../src/worker/send/rate-limiter.ts';
import { bareRecordLane, codec, framed, providerSuccess } from '../helpers/command-records.ts';
import { useCleanups } from '../helpers/fixtures.ts';

describe('timeToSendSeconds', () => {
  it('is the seconds between the record timestamp and the call start', () => {
    expect(timeToSendSeconds('1800000000000', 1_800_000_002_345)).toBe(2.345);
    expect(timeToSendSeconds('1800000000000', 1_800_000_000_000)).toBe(0);
  });

  it('is 0, never negative, when the publisher clock is ahead of ours', () => {
    expect(timeToSendSeconds('1800000005000', 1_800_000_000_000)).toBe(0);
  });

  it('is undefined without a usable timestamp (absent, not a number, Kafka -1, absurdly long)', () => {
    for (const timestamp of [undefined, '', 'soon', '-1', '0', '1'.repeat(21)])
      expect(timeToSendSeconds(timestamp, 1_800_000_000_000), String(timestamp)).toBeUndefined();
  });
});

describe('firstCallOnly', () => {
  it('reports only the first call start', () => {
    let first = 0;
    const callStarting = firstCallOnly(() => (first += 1));
    callStarting();
    callStarting();
    callStarting();
    expect(first).toBe(1);
  });
});

describe('SendStageClock', () => {
  it('splits the time to send into stages that add up to it', () => {
    const stages = new SendStageClock('1800000000000', 1_800_000_000_120);
    stages.admitting(1_800_000_000_125);
    stages.marking(1_800_000_000_132);
    expect(stages.calling(1_800_000_000_162)).toEqual({ delivery: 0.12, preparation: 0.005, admission: 0.007, mark: 0.03 });
  });

  it('tells the stages once, at the first call: a retry after it changes nothing', () => {
    const stages = new SendStageClock('1800000000000', 1_800_000_000_000);
    stages.admitting(1_800_000_000_000);
    stages.marking(1_800_000_000_010);
    expect(stages.calling(1_800_000_000_060)).toEqual({ delivery: 0, preparation: 0, admission: 0.01, mark: 0.05 });
    stages.admitting(1_800_000_000_500);
    stages.marking(1_800_000_000_900);
    expect(stages.calling(1_800_000_001_000)).toBeUndefined();
  });

  it('has no delivery stage without a usable timestamp, and no mark stage without a mark to wait for', () => {
    const stages = new SendStageClock(undefined, 1_800_000_000_000);
    stages.admitting(1_800_000_000_004);
    expect(stages.calling(1_800_000_000_010)).toEqual({ preparation: 0.004, admission: 0.006, mark: 0 });
  });

  it('gives a publisher clock ahead of ours a delivery of 0, never a negative one (the stages then add up to more than the time to send)', () => {
    const stages = new SendStageClock('1800000005000', 1_800_000_000_000);
    stages.admitting(1_800_000_000_010);
    expect(stages.calling(1_800_000_000_030)).toEqual({ delivery: 0, preparation: 0.01, admission: 0.02, mark: 0 });
    expect(timeToSendSeconds('1800000005000', 1_800_000_000_030)).toBe(0);
  });
});

const lane = bareRecordLane;

const PUBLISHED_AT = 1_800_000_000_000;

/** Epoch ms the test's clock shows; the scripted service moves it on by 10 s during each call. */
let clock = 0;

class SlowService implements ProviderClient {
  calls = 0;
  async send(_request: ProviderRequest): Promise<ProviderSuccess> {
    this.calls += 1;
    clock += 10_000;
    return providerSuccess();
  }
  close(): void {}
}

function record(to: string, timestamp: string | undefined): CommandRecord {
  const command: SendCommand = {
    commandId: `c-${to}`,
    createdAt: PUBLISHED_AT,
    expiresAt: null,
    metadata: {},
    operation: { kind: 'text', to: [to], signature: 'Acme', content: 'hello' },
  };
  return { key: Buffer.from(command.commandId), value: framed(1, commandType.toBuffer(commandToAvro(command))), timestamp };
}

const cleanups = useCleanups();

/**
 * handleRecord on the test clock, with the scripted service, observing both metrics on `metrics`;
 * the codec, the rate limit's tokens and the lane's mark wait as given.
 */
async function handleScripted(
  message: CommandRecord,
  o: { readonly metrics: ReturnType<typeof createMetrics>; readonly codec?: typeof codec; readonly tokens?: TokenSource; readonly lane?: RecordLane },
): Promise<{ outcome: string; calls: number }> {
  const service = new SlowService();
  const gate = new ServiceGate({
    backoff: { insufficient_funds: { initialMs: 600_000, maxMs: 600_000 }, circuit_open: { initialMs: 600_000, maxMs: 600_000 } },
  });
  cleanups.add(() => gate.close());
  const rateLimiter = o.tokens ?? new RateLimiter(0);
  const sender = new GuardedSender({ client: service, gate, outages: new OutageCounter(5), rateLimiter, fundsPolicy: 'pause' });
  const deps = {
    codec: o.codec ?? codec,
    sender,
    policy: DEFAULT_VALIDATION_POLICY,
    inDoubtPolicy: 'report' as const,
    maxRecordBytes: 1_000_000,
    maxCommandBytes: 1_000_000,
    now: () => clock,
    timeToSend: o.metrics.timeToSend,
    sendStages: (stage: string, seconds: number) => o.metrics.sendStages.observe({ priority: 'normal', stage }, seconds),
  };
  const outcome = await handleRecord(message, { topic: 'cmds', partition: 0, offset: '7' }, deps, new AbortController().signal, o.lane ?? lane);
  return { outcome: outcome.kind === 'result' ? outcome.result.outcome : outcome.kind, calls: service.calls };
}

async function handle(message: CommandRecord): Promise<{ observed: { count: number; sum: number }; calls: number; outcome: string }> {
  const metrics = createMetrics();
  const { outcome, calls } = await handleScripted(message, { metrics });
  const values = (await metrics.timeToSend.get()).values;
  const count = values.find((v) => v.metricName === 'sms_worker_time_to_send_seconds_count')?.value ?? 0;
  const sum = values.find((v) => v.metricName === 'sms_worker_time_to_send_seconds_sum')?.value ?? 0;
  return { observed: { count, sum }, calls, outcome };
}

/** The series of sms_worker_send_stage_seconds with this suffix (one per stage observed). */
async function stageSeries(
  metrics: ReturnType<typeof createMetrics>,
  suffix: 'sum' | 'count',
): Promise<{ labels: Record<string, string | number>; value: number }[]> {
  return (await metrics.sendStages.get()).values.filter((v) => v.metricName === `sms_worker_send_stage_seconds_${suffix}`);
}

describe('handleRecord observes sms_worker_send_stage_seconds', () => {
  it('once per sent command, each stage where its wait was, adding up to the time to send', async () => {
    clock = PUBLISHED_AT + 120;
    const metrics = createMetrics();
    // Each stage's wait, scripted on the test clock: decoding 5 ms, the rate limit's token 7 ms,
    // the mark (and slot) 30 ms.
    const { outcome, calls } = await handleScripted(record('+8613800138000', String(PUBLISHED_AT)), {
      metrics,
      codec: { ...codec, decode: async (value: Buffer | null) => ((clock += 5), codec.decode(value)) },
      tokens: { take: async () => void (clock += 7) },
      lane: { ...bareRecordLane, sendHooks: () => ({ beforeSend: async () => ((clock += 30), true) }) },
    });
    expect(outcome).toBe('SENT');
    expect(calls).toBe(1);

    const sums = Object.fromEntries((await stageSeries(metrics, 'sum')).map((v) => [v.labels['stage'], Math.round(v.value * 1000)]));
    const counts = (await stageSeries(metrics, 'count')).map((v) => v.value);
    expect(sums).toEqual({ delivery: 120, preparation: 5, admission: 7, mark: 30 });
    expect(counts).toEqual([1, 1, 1, 1]);
    const timeToSend = (await metrics.timeToSend.get()).values.find((v) => v.metricName === 'sms_worker_time_to_send_seconds_sum')?.value;
    expect(timeToSend).toBeCloseTo(0.162, 6);
  });
});

describe('handleRecord does not observe sms_worker_send_stage_seconds', () => {
  it('for a command whose mark or slot is refused (never sent)', async () => {
    clock = PUBLISHED_AT + 120;
    const metrics = createMetrics();
    const { outcome, calls } = await handleScripted(record('+8613800138000', String(PUBLISHED_AT)), {
      metrics,
      lane: { ...bareRecordLane, sendHooks: () => ({ beforeSend: async () => false }) },
    });
    expect(outcome).toBe('abandoned');
    expect(calls).toBe(0);
    expect(await stageSeries(metrics, 'count')).toEqual([]);
  });
});

describe('handleRecord observes sms_worker_time_to_send_seconds', () => {
  it('once per sent command: from the record timestamp to the start of the call, not its end', async () => {
    clock = PUBLISHED_AT + 2_345;
    const { observed, calls, outcome } = await handle(record('+8613800138000', String(PUBLISHED_AT)));
    expect(outcome).toBe('SENT');
    expect(calls).toBe(1);
    // The call took 10 s on the test clock: measured at its end, this would be 12.345.
    expect(observed).toEqual({ count: 1, sum: 2.345 });
  });

  it('not for a command that is never sent (rejected by validation)', async () => {
    clock = PUBLISHED_AT + 2_345;
    const { observed, calls, outcome } = await handle(record('+86 not a number', String(PUBLISHED_AT)));
    expect(outcome).toBe('REJECTED');
    expect(calls).toBe(0);
    expect(observed).toEqual({ count: 0, sum: 0 });
  });

  it('not for a record without a timestamp (the command is still sent)', async () => {
    clock = PUBLISHED_AT + 2_345;
    const { observed, calls, outcome } = await handle(record('+8613800138000', undefined));
    expect(outcome).toBe('SENT');
    expect(calls).toBe(1);
    expect(observed).toEqual({ count: 0, sum: 0 });
  });
});
