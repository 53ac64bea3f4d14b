import { describe, expect, it } from 'vitest';
import { SmsWorkerError } from '../../../src/errors.ts';
import type { PartitionReader } from '../../../src/kafka/partition-reader.ts';
import type { KeyedRecord, KeyedRecordProducer } from '../../../src/kafka/ports.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { ledgerHandovers } from '../../../src/worker/ownership/handovers.ts';

/** The producer port: its first send fails (past its send timeout, as a broker that stopped answering makes it), later ones succeed. */
class FirstSendFails implements KeyedRecordProducer {
  readonly sent: KeyedRecord[][] = [];
  connected = true;
  async connect(): Promise<void> {}
  async disconnect(): Promise<void> {}
  send(_topic: string, records: readonly KeyedRecord[]): Promise<void> {
    this.sent.push([...records]);
    return this.sent.length === 1
      ? Promise.reject(new SmsWorkerError('KAFKA_SEND_TIMEOUT', 'a send to ledger took longer than 5000 ms', { retryable: true }))
      : Promise.resolve();
  }
}

/** Handovers written through `producer`; nothing to read (a handover taken from the ledger would need the reader). */
function handoversOver(producer: FirstSendFails, graceMs: number) {
  return ledgerHandovers({
    ledgerTopic: 'ledger',
    key: 'handover/g/t',
    producer,
    reader: {} as PartitionReader,
    admin: { fetchTopicOffsetsByTimestamp: async () => [] },
    maxRecordBytes: 1_000_000,
    graceMs,
    pollMs: 50,
    log: createLogger('silent'),
  });
}

const mark = (n: number) => ({ offset: BigInt(n), commandId: `c${n}`, at: Date.now(), by: `claim.${n}` });

const offsets = (producer: FirstSendFails): string[][] => producer.sent.map((batch) => batch.map((r) => (JSON.parse(r.value.toString()) as { o: string }).o));

describe('ledgerHandovers', () => {
  it('a send that fails (timed out) is tried again within the grace; the handovers queued behind it go out in the next send meanwhile', async () => {
    const producer = new FirstSendFails();
    const handovers = handoversOver(producer, 10_000);
    const first = handovers.write(0, 0n, mark(0), { kind: 'withdrawn' });
    const second = handovers.write(0, 1n, mark(1), { kind: 'withdrawn' });
    await expect(second).resolves.toBeUndefined();
    await expect(first).resolves.toBeUndefined();
    expect(offsets(producer)).toEqual([['0'], ['1'], ['0']]);
  });

  it('a send that fails once the grace has passed fails its handover (the next owner has stopped waiting for it)', async () => {
    const producer = new FirstSendFails();
    const handovers = handoversOver(producer, 0);
    await expect(handovers.write(0, 0n, mark(0), { kind: 'withdrawn' })).rejects.toMatchObject({ code: 'KAFKA_SEND_TIMEOUT' });
    expect(offsets(producer)).toEqual([['0']]);
  });

  it('a write whose producer its owner closed (a shutdown) is not tried again', async () => {
    const closed = new FirstSendFails();
    closed.send = (_topic, records) => {
      closed.sent.push([...records]);
      return Promise.reject(new SmsWorkerError('KAFKA_PRODUCER_CLOSED', 'the producer for ledger was disconnected', { retryable: false }));
    };
    const handovers = handoversOver(closed, 10_000);
    await expect(handovers.write(0, 0n, mark(0), { kind: 'withdrawn' })).rejects.toMatchObject({ code: 'KAFKA_PRODUCER_CLOSED' });
    expect(offsets(closed)).toEqual([['0']]);
  });

  it('a claim of the same partition by this process takes its own handovers at once, also those whose send failed (the broker away)', async () => {
    const producer = new FirstSendFails();
    const handovers = handoversOver(producer, 60_000);
    const written = handovers.write(3, 7n, mark(7), { kind: 'withdrawn' });
    // The first send has failed; the next try waits its backoff.
    await new Promise((resolve) => setImmediate(resolve));
    expect(producer.sent).toHaveLength(1);
    const signal = new AbortController().signal;
    // The next claim of partition 3 by this process: its own settlement, without waiting out the grace (60 s) or the write.
    await expect(handovers.lookout(3, [mark(7)], Date.now()).settlementOf(mark(7), signal)).resolves.toEqual({ kind: 'withdrawn' });
    expect(producer.sent).toHaveLength(1);
    // Not for the same mark name elsewhere: another partition, or another offset.
    const elsewhere = new AbortController();
    const otherPartition = handovers.lookout(4, [mark(7)], Date.now()).settlementOf(mark(7), elsewhere.signal);
    const otherOffset = handovers.lookout(3, [{ ...mark(7), offset: 8n }], Date.now()).settlementOf({ ...mark(7), offset: 8n }, elsewhere.signal);
    setTimeout(() => elsewhere.abort(), 200);
    await expect(otherPartition).resolves.toBeUndefined();
    await expect(otherOffset).resolves.toBeUndefined();
    await expect(written).resolves.toBeUndefined();
  });
});
