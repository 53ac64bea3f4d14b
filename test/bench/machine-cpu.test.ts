import { describe, expect, it } from 'vitest';
import { busyShareBetween, machineNote, parseProcStat, type MachineCpuSample } from '../../bench/lib/machine-cpu.ts';

// /proc/stat of a two-core machine (trimmed: the lines after the cpu lines are ignored).
const PROC_STAT = [
  'cpu  1000 50 400 8000 500 20 30 0 0 0',
  'cpu0 500 25 200 4000 250 10 15 0 0 0',
  'cpu1 500 25 200 4000 250 10 15 0 0 0',
  'intr 123456 0 0',
  'ctxt 987654',
].join('\n');

describe('parseProcStat', () => {
  it('counts idle and iowait as idle, everything else of the aggregate line as busy, and the per-core lines as cores', () => {
    expect(parseProcStat(PROC_STAT)).toEqual({ busyTicks: 1000 + 50 + 400 + 20 + 30, totalTicks: 10_000, cores: 2 });
  });

  it('counts steal as busy, and leaves guest time out (the kernel already counts it in user)', () => {
    const stat = 'cpu  100 0 100 700 0 0 0 100 999 999\ncpu0 100 0 100 700 0 0 0 100 999 999\n';
    expect(parseProcStat(stat)).toEqual({ busyTicks: 300, totalTicks: 1000, cores: 1 });
  });

  it('names what it could not read', () => {
    expect(() => parseProcStat('intr 1 2 3\n')).toThrow(/no aggregate cpu line/);
    expect(() => parseProcStat('cpu  a b c d\n')).toThrow(/unexpected \/proc\/stat cpu line/);
  });
});

describe('busyShareBetween', () => {
  const samples: MachineCpuSample[] = [
    { at: 0, busyTicks: 0, totalTicks: 0 },
    { at: 250, busyTicks: 40, totalTicks: 50 },
    { at: 500, busyTicks: 90, totalTicks: 100 },
    { at: 750, busyTicks: 100, totalTicks: 150 },
  ];

  it('is the busy share between the last sample at or before the start and the first at or after the end', () => {
    expect(busyShareBetween(samples, 250, 500)).toBeCloseTo(50 / 50);
    expect(busyShareBetween(samples, 500, 750)).toBeCloseTo(10 / 50);
    // A window between samples widens to the samples around it: 0 → 500 for 100 → 400.
    expect(busyShareBetween(samples, 100, 400)).toBeCloseTo(90 / 100);
  });

  it('is NaN when the window is not covered on both sides', () => {
    expect(busyShareBetween(samples, -10, 500)).toBeNaN();
    expect(busyShareBetween(samples, 250, 800)).toBeNaN();
    expect(busyShareBetween([], 0, 1)).toBeNaN();
  });
});

describe('machineNote', () => {
  it('names the busy share and the cores, and is empty when nothing was measured', () => {
    expect(machineNote({ busyShare: 0.964, cores: 2 })).toBe("; the machine's CPU 96% busy (all 2 cores, every process of the run)");
    expect(machineNote(undefined)).toBe('');
    expect(machineNote({ busyShare: Number.NaN, cores: 2 })).toBe('');
  });
});
