import { describe, expect, it } from 'vitest';
import { eventually, PollAbort, PollTimeout, within } from '../../tools/poll.ts';

const fast = { interval: { initialMs: 1, maxMs: 5 } };

describe('eventually', () => {
  it('returns the first value that is neither undefined nor false', async () => {
    let calls = 0;
    const value = await eventually(() => (++calls >= 3 ? { calls } : calls === 1 ? undefined : false), 5_000, 'three calls', fast);
    expect(value).toEqual({ calls: 3 });
  });

  it('treats a thrown error as "not yet" and quotes the last one when time runs out', async () => {
    const error = await eventually(
      () => {
        throw new Error('connection refused');
      },
      30,
      'the broker',
      fast,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PollTimeout);
    expect((error as Error).message).toBe('timed out waiting for the broker: connection refused');
  });

  it('builds the description when it times out', async () => {
    let state = 'starting';
    const waiting = eventually(
      () => undefined,
      30,
      () => `ready (state ${state})`,
      fast,
    );
    state = 'stuck';
    await expect(waiting).rejects.toThrow('timed out waiting for ready (state stuck)');
  });

  it('stops at once on PollAbort: no second check, no wait', async () => {
    let calls = 0;
    let ticks = 0;
    await expect(
      eventually(
        () => {
          calls += 1;
          throw new PollAbort('Kafka exited during start-up');
        },
        10_000,
        'Kafka',
        { ...fast, onTick: () => (ticks += 1) },
      ),
    ).rejects.toThrow('Kafka exited during start-up');
    expect(calls).toBe(1);
    expect(ticks).toBe(0);
  });

  it('calls onTick between checks', async () => {
    let ticks = 0;
    let calls = 0;
    await eventually(() => ++calls === 4 || undefined, 5_000, 'four calls', { ...fast, onTick: () => (ticks += 1) });
    expect(ticks).toBe(3);
  });
});

describe('within', () => {
  it('passes the step’s value through', async () => {
    await expect(within(1_000, 'a quick step', Promise.resolve(42))).resolves.toBe(42);
  });

  it('names the step that did not finish in time', async () => {
    await expect(within(20, 'pulling confluentinc/cp-kafka:8.1.0', new Promise(() => undefined))).rejects.toThrow(
      'pulling confluentinc/cp-kafka:8.1.0 did not complete within 20 ms',
    );
  });

  it('passes the step’s own failure through', async () => {
    await expect(within(1_000, 'a failing step', Promise.reject(new Error('no such host')))).rejects.toThrow('no such host');
  });
});
