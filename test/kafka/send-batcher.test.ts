import { describe, expect, it } from 'vitest';
import { QueueFullError, SendBatcher } from '../../src/kafka/send-batcher.ts';

interface Settle {
  resolve(): void;
  reject(error: Error): void;
}

/** A send port that records each batch and settles it when the test says so. */
function recordingSend() {
  const batches: { records: readonly string[]; done: Settle }[] = [];
  return {
    batches,
    send: (records: readonly string[]) =>
      new Promise<void>((resolve, reject) => {
        batches.push({ records, done: { resolve, reject } });
      }),
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('SendBatcher', () => {
  it('sends the first post at once and everything that queued meanwhile in the next send', async () => {
    const port = recordingSend();
    const batcher = new SendBatcher({ send: port.send, maxRecords: 100, maxQueued: 100 });
    const first = batcher.submit(['a']);
    const second = batcher.submit(['b', 'c']);
    const third = batcher.submit(['d']);
    expect(port.batches.map((b) => b.records)).toEqual([['a']]);
    port.batches[0]?.done.resolve();
    await first;
    await flush();
    expect(port.batches.map((b) => b.records)).toEqual([['a'], ['b', 'c', 'd']]);
    port.batches[1]?.done.resolve();
    await expect(Promise.all([second, third])).resolves.toEqual([undefined, undefined]);
  });

  it('fails every post of a failed send, and goes on with the next', async () => {
    const port = recordingSend();
    const batcher = new SendBatcher({ send: port.send, maxRecords: 100, maxQueued: 100 });
    const first = batcher.submit(['a']);
    const second = batcher.submit(['b']);
    port.batches[0]?.done.reject(new Error('broker down'));
    await expect(first).rejects.toThrow('broker down');
    await flush();
    port.batches[1]?.done.resolve();
    await expect(second).resolves.toBeUndefined();
  });

  it('keeps whole posts within maxRecords per send (a bigger post goes alone)', async () => {
    const port = recordingSend();
    const batcher = new SendBatcher({ send: port.send, maxRecords: 3, maxQueued: 100 });
    const posts = [batcher.submit(['x']), batcher.submit(['a', 'b']), batcher.submit(['c', 'd']), batcher.submit(['e', 'f', 'g', 'h'])];
    for (let i = 0; i < 4; i += 1) {
      port.batches[i]?.done.resolve();
      await flush();
    }
    expect(port.batches.map((b) => b.records)).toEqual([['x'], ['a', 'b'], ['c', 'd'], ['e', 'f', 'g', 'h']]);
    await Promise.all(posts);
  });

  it('refuses a post beyond maxQueued at once', async () => {
    const port = recordingSend();
    const batcher = new SendBatcher({ send: port.send, maxRecords: 100, maxQueued: 3 });
    void batcher.submit(['in-flight']);
    void batcher.submit(['a', 'b']);
    await expect(batcher.submit(['c', 'd'])).rejects.toBeInstanceOf(QueueFullError);
    expect(batcher.queued).toBe(2);
  });

  it('drops a post whose caller gave up before its send started: it is never sent', async () => {
    const port = recordingSend();
    const batcher = new SendBatcher({ send: port.send, maxRecords: 100, maxQueued: 100 });
    const first = batcher.submit(['a']);
    const giveUp = new AbortController();
    const abandoned = batcher.submit(['late'], giveUp.signal);
    giveUp.abort(new Error('timed out'));
    await expect(abandoned).rejects.toThrow('timed out');
    expect(batcher.queued).toBe(0);
    port.batches[0]?.done.resolve();
    await first;
    await flush();
    expect(port.batches.map((b) => b.records)).toEqual([['a']]);
  });
});
