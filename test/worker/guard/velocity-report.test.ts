// The velocity limits between validation and the send: the record handler screens each validated
// command before anything is sent; the report counts in bounded metrics and logs a block once.
import { describe, expect, it, vi } from 'vitest';
import { bareRecordLane, codec, framed } from '../../helpers/command-records.ts';
import { commandType } from '../../../src/contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../../../src/contracts/command.ts';
import { DEFAULT_VALIDATION_POLICY } from '../../../src/contracts/index.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import type { GuardedSender } from '../../../src/worker/send/guarded-sender.ts';
import { handleRecord, type RecordHandlerDeps } from '../../../src/worker/send/record-handler.ts';
import { DestinationGuard } from '../../../src/worker/guard/destination-guard.ts';
import { DEFAULT_VELOCITY_SETTINGS, type VelocityMode } from '../../../src/worker/guard/velocity.ts';
import { velocityReport } from '../../../src/worker/guard/velocity-report.ts';

const source = { topic: 'cmds', partition: 1, offset: '42' };
let seq = 0;

function text(to: string[]): SendCommand {
  seq += 1;
  return { commandId: `v-${seq}`, createdAt: 0, expiresAt: null, metadata: {}, operation: { kind: 'text', to, signature: 'Acme', content: 'hi' } };
}

function rig(mode: VelocityMode) {
  const metrics = createMetrics();
  const log = { info: vi.fn(), warn: vi.fn() };
  const clock = { now: 1_000_000 };
  const destinations = new DestinationGuard({
    settings: { ...DEFAULT_VELOCITY_SETTINGS, mode, limits: { prefix: { minute: 2, day: 0 }, region: { minute: 0, day: 0 } } },
    now: () => clock.now,
    observer: velocityReport(metrics, log),
  });
  const send = vi.fn<GuardedSender['send']>(async () => ({ kind: 'abandoned', attempts: 0 }));
  const deps: RecordHandlerDeps = {
    codec,
    sender: { send, destinations } as unknown as GuardedSender,
    policy: DEFAULT_VALIDATION_POLICY,
    inDoubtPolicy: 'report',
    maxRecordBytes: 1_000_000,
    maxCommandBytes: 1_000_000,
    now: () => clock.now,
  };
  const handle = (command: SendCommand) =>
    handleRecord({ key: null, value: framed(1, commandType.toBuffer(commandToAvro(command))) }, source, deps, new AbortController().signal, bareRecordLane);
  return { metrics, log, send, handle, clock };
}

describe('handleRecord with velocity limits', () => {
  it('enforce: the third code to a prefix within the minute is REJECTED (DESTINATION_VELOCITY_LIMITED), the service not called; the block logged once', async () => {
    const { metrics, log, send, handle } = rig('enforce');
    await handle(text(['+8613800138000']));
    await handle(text(['+8613800138001']));
    expect(send).toHaveBeenCalledTimes(2);
    const third = await handle(text(['+8613800138002']));
    const fourth = await handle(text(['+8613800138003']));
    expect(send).toHaveBeenCalledTimes(2);
    const result = third.kind === 'result' ? third.result : undefined;
    expect(result).toMatchObject({ outcome: 'REJECTED', attempts: 0, error: { code: 'DESTINATION_VELOCITY_LIMITED', stage: 'VALIDATION', retryable: false } });
    expect(result?.error?.details?.[0]?.field).toBe('operation.to[0]');
    expect(result?.error?.details?.[0]?.problem).toContain('+86 138 (region CN) is over VELOCITY_PREFIX_PER_MINUTE (2 per minute for the deployment)');
    expect(fourth.kind === 'result' && fourth.result.error?.code).toBe('DESTINATION_VELOCITY_LIMITED');
    expect((await metrics.velocityRejections.get()).values).toEqual([
      { labels: { rule: 'VELOCITY_PREFIX_PER_MINUTE', region: 'CN', mode: 'enforce', tenant: '' }, value: 2 },
    ]);
    expect((await metrics.velocityBlocks.get()).values).toEqual([{ labels: { kind: 'prefix', region: 'CN' }, value: 1 }]);
    expect((await metrics.velocityBlocked.get()).values).toEqual([{ labels: { kind: 'prefix', region: 'CN' }, value: 1 }]);
    // One warning for the block (naming the prefix, never a number), one info line per refused command.
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(log.warn.mock.calls)).toContain('+86 138');
    expect(JSON.stringify([log.warn.mock.calls, log.info.mock.calls])).not.toContain('13800138002');
    expect(log.info).toHaveBeenCalledTimes(2);
  });

  it('monitor: counted and logged, every command sent', async () => {
    const { metrics, send, handle } = rig('monitor');
    for (let i = 0; i < 4; i += 1) await handle(text([`+861380013800${i}`]));
    expect(send).toHaveBeenCalledTimes(4);
    expect((await metrics.velocityRejections.get()).values).toEqual([
      { labels: { rule: 'VELOCITY_PREFIX_PER_MINUTE', region: 'CN', mode: 'monitor', tenant: '' }, value: 2 },
    ]);
  });

  it('the blocked gauge goes back to 0 when the block ends', async () => {
    const { metrics, handle, clock } = rig('enforce');
    for (let i = 0; i < 3; i += 1) await handle(text([`+861380013800${i}`]));
    clock.now += DEFAULT_VELOCITY_SETTINGS.blockMs + 1;
    await handle(text(['+8613900139000']));
    expect((await metrics.velocityBlocked.get()).values).toEqual([{ labels: { kind: 'prefix', region: 'CN' }, value: 0 }]);
  });
});
