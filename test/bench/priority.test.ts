import { describe, expect, it } from 'vitest';
import { prng, verificationCode } from '../../bench/lib/commands.ts';
import { leftAt, parseWorkerEnv, priorityTargets, requestRates } from '../../bench/lib/priority.ts';

describe('verificationCode', () => {
  it('makes voice codes and template texts, one recipient each, about half and half', () => {
    const random = prng(3);
    const kinds = new Map<string, number>();
    for (let i = 0; i < 1000; i += 1) {
      const { kind, command } = verificationCode(`p-${i}`, random, 0);
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      expect(command.commandId).toBe(`p-${i}`);
      if (command.operation.kind === 'voice') expect(kind).toBe('voice');
      else {
        expect(kind).toBe('text-template');
        expect(command.operation.to).toHaveLength(1);
        expect(command.operation.templateData).toHaveProperty('code');
      }
    }
    expect([...kinds.keys()].sort()).toEqual(['text-template', 'voice']);
    expect(kinds.get('voice')).toBeGreaterThan(400);
    expect(kinds.get('voice')).toBeLessThan(600);
  });
});

describe('requestRates', () => {
  it('counts requests with an id received in [from, to) per second, bulk apart from the rest', () => {
    const log = [
      { correlationId: 'q-1', receivedAt: 999 },
      { correlationId: 'q-2', receivedAt: 1000 },
      { correlationId: 'q-3', receivedAt: 1500 },
      { correlationId: 'code-1', receivedAt: 2000 },
      { correlationId: undefined, receivedAt: 2100 },
      { correlationId: 'q-4', receivedAt: 2999 },
      { correlationId: 'q-5', receivedAt: 3000 },
    ];
    expect(requestRates(log, 1000, 3000, (id) => id.startsWith('q-'))).toEqual({ bulkPerSecond: 1.5, otherPerSecond: 0.5 });
  });

  it('gives NaN for an empty window', () => {
    expect(requestRates([], 1000, 1000, () => true).bulkPerSecond).toBeNaN();
  });
});

describe('leftAt', () => {
  it('counts the ids neither requested nor answered by then', () => {
    const requested = new Map([
      ['a', 100],
      ['b', 300],
    ]);
    const visible = new Map([
      ['c', 150],
      ['b', 350],
      ['d', 400],
    ]);
    // a requested, c answered (a REJECTED one never reaches the service) by 200; b, d and e not yet.
    expect(leftAt(['a', 'b', 'c', 'd', 'e'], 200, requested, visible)).toBe(3);
    expect(leftAt(['a', 'b', 'c', 'd', 'e'], 400, requested, visible)).toBe(1);
  });
});

describe('priorityTargets', () => {
  it('codes p99 within twice the baseline and 100 ms; bulk at least 80% of what the codes leave', () => {
    expect(priorityTargets({ loadedP99Ms: 60, baselineP99Ms: 40, rateLimit: 500, bulkPerSecond: 250, codesPerSecond: 200 })).toEqual({
      p99LimitMs: 80,
      p99FactorMet: true,
      p99AbsoluteMet: true,
      bulkFloorPerSecond: 240,
      bulkMet: true,
    });
    expect(priorityTargets({ loadedP99Ms: 90, baselineP99Ms: 40, rateLimit: 500, bulkPerSecond: 230, codesPerSecond: 200 })).toMatchObject({
      p99FactorMet: false,
      p99AbsoluteMet: true,
      bulkMet: false,
    });
    expect(priorityTargets({ loadedP99Ms: 150, baselineP99Ms: 100, rateLimit: 500, bulkPerSecond: 300, codesPerSecond: 200 })).toMatchObject({
      p99FactorMet: true,
      p99AbsoluteMet: false,
    });
  });

  it('is NOT MET where a figure could not be measured', () => {
    const t = priorityTargets({ loadedP99Ms: Number.NaN, baselineP99Ms: 40, rateLimit: 500, bulkPerSecond: Number.NaN, codesPerSecond: 200 });
    expect([t.p99FactorMet, t.p99AbsoluteMet, t.bulkMet]).toEqual([false, false, false]);
  });
});

describe('parseWorkerEnv', () => {
  it('reads KEY=value pairs, a value keeping its own = signs, and nothing from an empty spec', () => {
    expect(parseWorkerEnv('LEDGER_ENABLED=false,NODE_OPTIONS=--max-semi-space-size=16')).toEqual({
      LEDGER_ENABLED: 'false',
      NODE_OPTIONS: '--max-semi-space-size=16',
    });
    expect(parseWorkerEnv('')).toEqual({});
  });

  it('refuses a pair without a variable name', () => {
    expect(() => parseWorkerEnv('=1')).toThrow(/KEY=value/);
    expect(() => parseWorkerEnv('lower=1')).toThrow(/KEY=value/);
  });
});
