import { describe, expect, it } from 'vitest';
import { FetchPauses, pausePlan } from '../../../src/worker/source/fetch-pauses.ts';

describe('pausePlan', () => {
  it('pauses every assigned partition while the gate is closed', () => {
    expect(pausePlan([0, 1, 2], true, new Set(), new Set())).toEqual({ pause: [0, 1, 2], resume: [] });
  });

  it('pauses held partitions only while the gate is open, and resumes the rest', () => {
    expect(pausePlan([0, 1, 2], false, new Set([1]), new Set([0, 1, 2]))).toEqual({ pause: [], resume: [0, 2] });
  });

  it('resumes a paused partition that is no longer assigned', () => {
    expect(pausePlan([0], false, new Set(), new Set([5]))).toEqual({ pause: [], resume: [5] });
  });
});

describe('FetchPauses', () => {
  function recorder(): { calls: string[]; consumer: { pause: (t: string, p: readonly number[]) => void; resume: (t: string, p: readonly number[]) => void } } {
    const calls: string[] = [];
    return {
      calls,
      consumer: {
        pause: (topic, partitions) => void calls.push(`pause ${topic} ${partitions.join(',')}`),
        resume: (topic, partitions) => void calls.push(`resume ${topic} ${partitions.join(',')}`),
      },
    };
  }

  it('keeps a partition held by a lane paused when the gate opens (a topic-wide resume would fetch it)', () => {
    const { calls, consumer } = recorder();
    const pauses = new FetchPauses(consumer, 't');
    pauses.assign([0, 1]);
    pauses.hold(1, 'lane');
    pauses.setGateClosed(true);
    pauses.setGateClosed(false);
    expect(calls).toEqual(['pause t 1', 'pause t 0', 'resume t 0']);
  });

  it('a holder releases only its own hold', () => {
    const { calls, consumer } = recorder();
    const pauses = new FetchPauses(consumer, 't');
    pauses.assign([0]);
    pauses.hold(0, 'old lane');
    pauses.hold(0, 'new lane');
    pauses.release(0, 'old lane');
    expect(calls).toEqual(['pause t 0']);
    pauses.release(0, 'new lane');
    expect(calls).toEqual(['pause t 0', 'resume t 0']);
  });

  it('stops fetching every partition at shutdown, whatever the gate does', () => {
    const { calls, consumer } = recorder();
    const pauses = new FetchPauses(consumer, 't');
    pauses.assign([0, 1]);
    pauses.stopFetching();
    pauses.setGateClosed(false);
    expect(calls).toEqual(['pause t 0,1']);
  });

  it('while the consumer is down (crashed, restarting) nothing is asked of it; the next join pauses afresh what the gate still closes', () => {
    const calls: string[] = [];
    let down = false;
    // kafkajs refuses pause and resume while its consumer has no group (between a crash and its restart's join).
    const consumer = {
      pause: (topic: string, partitions: readonly number[]) => {
        if (down) throw new Error('Consumer group was not initialized, consumer#run must be called first');
        calls.push(`pause ${topic} ${partitions.join(',')}`);
      },
      resume: (topic: string, partitions: readonly number[]) => {
        if (down) throw new Error('Consumer group was not initialized, consumer#run must be called first');
        calls.push(`resume ${topic} ${partitions.join(',')}`);
      },
    };
    const pauses = new FetchPauses(consumer, 't');
    pauses.assign([0, 1]);
    pauses.setGateClosed(true);
    expect(calls).toEqual(['pause t 0,1']);
    down = true;
    pauses.consumerStopped();
    pauses.setGateClosed(false);
    pauses.hold(1, 'lane');
    pauses.release(1, 'lane');
    pauses.setGateClosed(true);
    // The restarted consumer's fresh group has nothing paused: the join pauses what the closed gate holds.
    down = false;
    pauses.assign([0, 1, 2]);
    expect(calls).toEqual(['pause t 0,1', 'pause t 0,1,2']);
  });

  it('a new generation drops every hold', () => {
    const { calls, consumer } = recorder();
    const pauses = new FetchPauses(consumer, 't');
    pauses.assign([0, 1]);
    pauses.hold(0, 'lost');
    pauses.assign([0, 2]);
    expect(calls).toEqual(['pause t 0', 'resume t 0']);
  });
});
