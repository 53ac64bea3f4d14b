/**
 * Command records as the worker fetches them, without a registry: the real Avro types behind
 * Confluent framing with fixed schema ids, and a codec double over them.
 */
import { commandType } from '../../src/contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../../src/contracts/command.ts';
import type { FetchedBatch, FetchedRecord } from '../../src/kafka/ports.ts';
import type { ProviderSuccess } from '../../src/provider/types.ts';
import type { RecordLane } from '../../src/worker/send/record-handler.ts';
import { framed } from '../../tools/simulate/registry-free-codec.ts';

export { framed, registryFreeCodec as codec } from '../../tools/simulate/registry-free-codec.ts';

export function command(commandId: string): SendCommand {
  return {
    commandId,
    createdAt: Date.now(),
    expiresAt: null,
    metadata: {},
    operation: { kind: 'text', to: ['+8613800138000'], signature: 'Acme', content: `hello ${commandId}` },
  };
}

/** A command record at `offset`, keyed `key` (null: no key), with commandId `c<offset>` unless given. */
export function record(offset: number, key: string | null, commandId = `c${offset}`): FetchedRecord {
  return { offset: String(offset), key: key === null ? null : Buffer.from(key), value: framed(1, commandType.toBuffer(commandToAvro(command(commandId)))) };
}

/** The service's answer to a one-recipient text send, as the provider client returns it. */
export function providerSuccess(): ProviderSuccess {
  return {
    result: {
      recipients: 1,
      messageCount: 1,
      totalAmount: '0.050000',
      payAmount: '0.050000',
      virtualAmount: '0.000000',
      messages: [{ id: 'm1', to: '+8613800138000', regionCode: 'CN', countryCode: '86', messageCount: 1, status: 'Sent', upstream: 'up', price: '0.050000' }],
    },
    requestId: 'req-1',
    attempts: 1,
  };
}

/** A fetched batch that records which offsets the worker resolved (as the consumer would see it). */
export interface RecordingBatch extends FetchedBatch {
  readonly resolved: string[];
}

export function recordingBatch(topic: string, partition: number, messages: FetchedRecord[]): RecordingBatch {
  const resolved: string[] = [];
  return {
    topic,
    partition,
    highWatermark: String(Number(messages.at(-1)?.offset ?? '-1') + 1),
    messages,
    resolved,
    resolveOffset: (offset) => void resolved.push(offset),
    isRunning: () => true,
    isStale: () => false,
    heartbeat: () => Promise.resolve(),
  };
}

/** Enough of a partition for a record handled on its own: nothing inherited, no repeats, no ledger hooks. */
export const bareRecordLane: RecordLane = {
  identify: () => ({ kind: 'new', resent: false }),
  sendHooks: () => undefined,
};
