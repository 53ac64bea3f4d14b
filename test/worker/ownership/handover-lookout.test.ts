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

  it('once the grace has passed with no handover, asks the result topic about those marks together: one whose result is there is `published`', async () => {
    const partition = new Partition();
    const old = Date.now() - 20_000;
    const [a, b, c] = [mark(5n, 'a.1', old), mark(6n, 'a.2', old), mark(7n, 'a.3', Date.now())];
    partition.log.push({ offset: 7n, by: 'a.3', settlement: { kind: 'withdrawn' } });
    const asked: bigint[][] = [];
    const found = new HandoverLookout({
      source: partition,
      marks: [a, b, c],
      graceMs: 10_000,
      pollMs: 2,
      log: createLogger('silent'),
      published: async (marks) => {
        asked.push(marks.map((m) => m.offset));
        return new Set([6n]);
      },
    });
    const signal = new AbortController().signal;
    const settled = await Promise.all([a, b, c].map((m) => found.settlementOf(m, signal)));
    expect(settled).toEqual([undefined, { kind: 'published' }, { kind: 'withdrawn' }]);
    // A handover found is never searched for; the two past their grace in one search.
    expect(asked).toEqual([[5n, 6n]]);
  });

  it('a result search that fails counts as nothing found (UNKNOWN), never as found', async () => {
    const partition = new Partition();
    const m = mark(5n, 'a.1', Date.now() - 20_000);
    const found = new HandoverLookout({
      source: partition,
      marks: [m],
      graceMs: 10_000,
      pollMs: 2,
      log: createLogger('silent'),
      published: () => Promise.reject(new Error('the result topic is away')),
    });
    await expect(found.settlementOf(m, new AbortController().signal)).resolves.toBeUndefined();
  });

  it('looks for the results of `answered` marks first, once, before any handover: a found one is `published`, never the handover’s result again', async () => {
    const partition = new Partition();
    const answered = { ...mark(5n, 'a.1'), answered: true as const };
    const plain = mark(6n, 'a.2');
    // The earlier owner handed both over (their results), as it does for a transaction it could not tell committed.
    const result = { kind: 'result', result: { commandId: 'c5' } } as unknown as Handover['settlement'];
    partition.log.push({ offset: 5n, by: 'a.1', settlement: result }, { offset: 6n, by: 'a.2', settlement: { kind: 'withdrawn' } });
    let release: () => void = () => undefined;
    const searches: bigint[][] = [];
    const found = new HandoverLookout({
      source: partition,
      marks: [answered, plain],
      graceMs: 10_000,
      pollMs: 2,
      log: createLogger('silent'),
      // This process's own handovers too: not taken while the search is under way.
      own: (m) => (m.offset === 5n ? result : undefined),
      published: async (marks) => {
        searches.push(marks.map((m) => m.offset));
        await new Promise<void>((resolve) => (release = resolve));
        return new Set([5n]);
      },
    });
    const signal = new AbortController().signal;
    const first = found.settlementOf(plain, signal);
    await new Promise((r) => setTimeout(r, 10));
    // Asked while the search is under way (the race the shipped-lane simulation found: the own handover was taken).
    const second = found.settlementOf(answered, signal);
    release();
    expect(await Promise.all([first, second])).toEqual([{ kind: 'withdrawn' }, { kind: 'published' }]);
    expect(searches).toEqual([[5n]]);
    // Asked again later: still found, no second search.
    await expect(found.settlementOf(answered, signal)).resolves.toEqual({ kind: 'published' });
    expect(searches).toHaveLength(1);
  });

  it('an `answered` mark whose result is not there goes on as any other: its handover is taken', async () => {
    const partition = new Partition();
    const answered = { ...mark(5n, 'a.1'), answered: true as const };
    partition.log.push({ offset: 5n, by: 'a.1', settlement: { kind: 'withdrawn' } });
    const found = new HandoverLookout({
      source: partition,
      marks: [answered],
      graceMs: 10_000,
      pollMs: 2,
      log: createLogger('silent'),
      published: async () => new Set(),
    });
    await expect(found.settlementOf(answered, new AbortController().signal)).resolves.toEqual({ kind: 'withdrawn' });
  });

  it('a record answered without a call (`uncalled`): `published` when its result is there, else handled as new at once (no grace to wait out), and without a search at all', async () => {
    const uncalled = (offset: bigint): OpenMark => ({ ...mark(offset, `answered.${offset}`), answered: true, uncalled: true });
    const [found, notFound] = [uncalled(5n), uncalled(6n)];
    const withSearch = new HandoverLookout({
      source: new Partition(),
      marks: [found, notFound],
      graceMs: 3_600_000,
      pollMs: 2,
      log: createLogger('silent'),
      published: async () => new Set([5n]),
    });
    const signal = new AbortController().signal;
    expect(await Promise.all([withSearch.settlementOf(found, signal), withSearch.settlementOf(notFound, signal)])).toEqual([
      { kind: 'published' },
      { kind: 'withdrawn' },
    ]);
    const without = new HandoverLookout({ source: new Partition(), marks: [found], graceMs: 3_600_000, pollMs: 2, log: createLogger('silent') });
    await expect(without.settlementOf(found, signal)).resolves.toEqual({ kind: 'withdrawn' });
  });
});
