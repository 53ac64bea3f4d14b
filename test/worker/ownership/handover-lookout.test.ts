import { describe, expect, it } from 'vitest';
import { HandoverLookout, type HandoverSource } from '../../../src/worker/ownership/handover-lookout.ts';
import type { Handover } from '../../../src/worker/ownership/handover-record.ts';
import type { OpenMark } from '../../../src/worker/lane/ledger-checkpoint.ts';
import { createLogger } from '../../../src/observability/logger.ts';

/** A ledger partition in memory: handovers appended at offsets from 100 on (what the lookout reads through its source). */
class Partition implements HandoverSource {
  readonly log: Handover[] = [];
  reads = 0;
  startedAt: number | undefined;
  async startAt(timestamp: number): Promise<bigint> {
    this.startedAt = timestamp;
    return 100n;
  }
  async readFrom(from: bigint): Promise<{ handovers: Handover[]; next: bigint }> {
    this.reads += 1;
    const end = 100n + BigInt(this.log.length);
    return { handovers: this.log.slice(Number(from - 100n)), next: end };
  }
}

const mark = (offset: bigint, by: string | undefined, at = Date.now()): OpenMark => ({ offset, commandId: `c${offset}`, at, ...(by !== undefined && { by }) });

function lookout(partition: Partition, marks: OpenMark[], graceMs = 10_000, claimedAt?: number): HandoverLookout {
  return new HandoverLookout({ source: partition, marks, graceMs, pollMs: 2, log: createLogger('silent'), ...(claimedAt !== undefined && { claimedAt }) });
}

describe('HandoverLookout', () => {
  it('finds a handover written after it started looking, from just before the oldest mark', async () => {
    const partition = new Partition();
    const at = Date.now();
    const m = mark(5n, 'a.1', at);
    const waiting = lookout(partition, [m]).settlementOf(m, new AbortController().signal);
    await new Promise((r) => setTimeout(r, 10));
    partition.log.push({ offset: 5n, by: 'a.1', settlement: { kind: 'withdrawn' } });
    await expect(waiting).resolves.toEqual({ kind: 'withdrawn' });
    expect(partition.startedAt).toBe(at - 5_000);
  });

  it('never takes a handover of another mark of the record (another owner’s, or an earlier one of the same claim)', async () => {
    const partition = new Partition();
    partition.log.push({ offset: 5n, by: 'a.1', settlement: { kind: 'withdrawn' } }, { offset: 6n, by: 'b.1', settlement: { kind: 'withdrawn' } });
    const m = mark(5n, 'b.1', Date.now() - 9_990);
    await expect(lookout(partition, [m]).settlementOf(m, new AbortController().signal)).resolves.toBeUndefined();
  });

  it('gives up once the mark’s grace has passed, after one look that started past it', async () => {
    const partition = new Partition();
    const m = mark(5n, 'a.1', Date.now() - 20_000);
    await expect(lookout(partition, [m]).settlementOf(m, new AbortController().signal)).resolves.toBeUndefined();
    expect(partition.reads).toBeGreaterThan(0);
  });

  it('answers at once for a mark without a name or one the claim did not inherit, and when aborted', async () => {
    const partition = new Partition();
    const inherited = mark(5n, 'a.1');
    const found = lookout(partition, [inherited]);
    await expect(found.settlementOf(mark(5n, undefined), new AbortController().signal)).resolves.toBeUndefined();
    await expect(found.settlementOf(mark(6n, 'a.2'), new AbortController().signal)).resolves.toBeUndefined();
    const abort = new AbortController();
    const waiting = found.settlementOf(inherited, abort.signal);
    abort.abort();
    await expect(waiting).resolves.toBeUndefined();
  });

  it('counts the grace from the claim when the mark is older (its call may have started long after the mark, never after the fence)', async () => {
    const partition = new Partition();
    const m = mark(5n, 'a.1', Date.now() - 20_000);
    const waiting = lookout(partition, [m], 10_000, Date.now()).settlementOf(m, new AbortController().signal);
    await new Promise((r) => setTimeout(r, 10));
    partition.log.push({ offset: 5n, by: 'a.1', settlement: { kind: 'withdrawn' } });
    await expect(waiting).resolves.toEqual({ kind: 'withdrawn' });
  });
});
