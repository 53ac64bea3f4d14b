// Geo refusals between validation and the send: the record handler reports them before anything is
// sent (and sends nothing to the refused), the report counts them in a bounded metric and logs one line.
import { describe, expect, it, vi } from 'vitest';
import { bareRecordLane, codec, framed } from '../../helpers/command-records.ts';
import { commandType } from '../../../src/contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../../../src/contracts/command.ts';
import { DEFAULT_VALIDATION_POLICY, type GeoPolicy, type GeoRefusal } from '../../../src/contracts/index.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { reportGeoRefusals } from '../../../src/worker/send/geo-report.ts';
import type { GuardedSender } from '../../../src/worker/send/guarded-sender.ts';
import { handleRecord, type RecordHandlerDeps } from '../../../src/worker/send/record-handler.ts';

const source = { topic: 'cmds', partition: 1, offset: '42' };

function text(to: string[]): SendCommand {
  return { commandId: 'geo-1', createdAt: Date.now(), expiresAt: null, metadata: {}, operation: { kind: 'text', to, signature: 'Acme', content: 'hi' } };
}

function recordOf(command: SendCommand) {
  return { key: null, value: framed(1, commandType.toBuffer(commandToAvro(command))) };
}

function deps(geo: GeoPolicy, onGeoRefusals: RecordHandlerDeps['onGeoRefusals'], send: GuardedSender['send']): RecordHandlerDeps {
  return {
    codec,
    sender: { send } as GuardedSender,
    policy: { ...DEFAULT_VALIDATION_POLICY, geo },
    inDoubtPolicy: 'report',
    maxRecordBytes: 1_000_000,
    maxCommandBytes: 1_000_000,
    onGeoRefusals,
  };
}

describe('handleRecord with geo permissions', () => {
  it('enforce: REJECTED with REGION_NOT_ALLOWED, the refusals reported, the service never called', async () => {
    const send = vi.fn<GuardedSender['send']>();
    const reported = vi.fn<NonNullable<RecordHandlerDeps['onGeoRefusals']>>();
    const geo: GeoPolicy = { mode: 'enforce', all: { allowed: ['CN'] }, text: {}, voice: {} };
    const command = text(['+8613800138000', '+14155552671']);
    const outcome = await handleRecord(recordOf(command), source, deps(geo, reported, send), new AbortController().signal, bareRecordLane);
    expect(outcome.kind).toBe('result');
    const result = outcome.kind === 'result' ? outcome.result : undefined;
    expect(result?.outcome).toBe('REJECTED');
    expect(result?.error?.code).toBe('REGION_NOT_ALLOWED');
    expect(result?.error?.details).toEqual([{ field: 'operation.to[1]', problem: "recipient's region US is not in GEO_ALLOWED_REGIONS (REGION_NOT_ALLOWED)" }]);
    expect(send).not.toHaveBeenCalled();
    expect(reported).toHaveBeenCalledTimes(1);
    expect(reported.mock.calls[0]?.[0]).toEqual([{ field: 'operation.to[1]', operation: 'text', region: 'US', rule: 'GEO_ALLOWED_REGIONS' }]);
    expect(reported.mock.calls[0]?.[2]).toEqual(source);
  });

  it('monitor: the refusals reported before the send, and every recipient sent to', async () => {
    const order: string[] = [];
    const send = vi.fn<GuardedSender['send']>(async () => {
      order.push('send');
      return { kind: 'abandoned', attempts: 0 };
    });
    const geo: GeoPolicy = { mode: 'monitor', all: { allowed: ['CN'] }, text: {}, voice: {} };
    await handleRecord(
      recordOf(text(['+8613800138000', '+14155552671'])),
      source,
      deps(geo, () => order.push('report'), send),
      new AbortController().signal,
      bareRecordLane,
    );
    expect(order).toEqual(['report', 'send']);
    expect(send.mock.calls[0]?.[0].body).toMatchObject({ to: ['+8613800138000', '+14155552671'] });
  });

  it('no lists: nothing reported', async () => {
    const reported = vi.fn();
    const send = vi.fn<GuardedSender['send']>(async () => ({ kind: 'abandoned', attempts: 0 }));
    await handleRecord(
      recordOf(text(['+14155552671'])),
      source,
      deps(DEFAULT_VALIDATION_POLICY.geo, reported, send),
      new AbortController().signal,
      bareRecordLane,
    );
    expect(reported).not.toHaveBeenCalled();
    expect(send).toHaveBeenCalledTimes(1);
  });
});

describe('reportGeoRefusals', () => {
  const refusals: GeoRefusal[] = [
    { field: 'operation.to[0]', operation: 'text', region: 'US', rule: 'GEO_ALLOWED_REGIONS' },
    { field: 'operation.to[3]', operation: 'text', region: 'US', rule: 'GEO_ALLOWED_REGIONS' },
    { field: 'operation.to[4]', operation: 'text', region: '001', rule: 'GEO_DENIED_REGIONS' },
  ];

  it('counts each refused recipient by operation, region and mode, and logs one line per command', async () => {
    const metrics = createMetrics();
    const log = { info: vi.fn() };
    reportGeoRefusals(metrics, log, 'monitor', refusals, text(['+14155552671']), source);
    const text_ = await metrics.registry.getSingleMetricAsString('sms_worker_geo_rejections_total');
    expect(text_).toContain('sms_worker_geo_rejections_total{operation="text",region="US",mode="monitor"} 2');
    expect(text_).toContain('sms_worker_geo_rejections_total{operation="text",region="001",mode="monitor"} 1');
    expect(log.info).toHaveBeenCalledTimes(1);
    const [fields, message] = log.info.mock.calls[0] as [Record<string, unknown>, string];
    expect(fields).toMatchObject({ commandId: 'geo-1', partition: 1, offset: '42', operation: 'text', mode: 'monitor', count: 3 });
    expect(message).toBe('geo permissions would refuse 3 recipients (regions 001, US); sent anyway (GEO_MODE=monitor)');
  });

  it('says what enforce did, and spells out at most 10 refusals in the line', () => {
    const log = { info: vi.fn() };
    const many = Array.from({ length: 25 }, (_, i): GeoRefusal => ({
      field: `operation.to[${i}]`,
      operation: 'text',
      region: 'NG',
      rule: 'GEO_DENIED_REGIONS',
    }));
    reportGeoRefusals(createMetrics(), log, 'enforce', many, text(['+14155552671']), source);
    const [fields, message] = log.info.mock.calls[0] as [{ refusals: unknown[]; count: number }, string];
    expect(fields.refusals).toHaveLength(10);
    expect(fields.count).toBe(25);
    expect(message).toBe('geo permissions refused 25 recipients (regions NG); nothing is sent to them');
  });
});
