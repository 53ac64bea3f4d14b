import { describe, expect, it } from 'vitest';
import { ProgressMonitor } from '../../src/worker/health.ts';

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('ProgressMonitor', () => {
  it('is live when no batch is in hand, however long nothing happened', () => {
    const c = clock();
    const monitor = new ProgressMonitor(5_000, c.now);
    c.advance(60_000);
    expect(monitor.live(undefined)).toEqual({ ok: true, detail: 'ok: no batch in hand' });
    monitor.begin('t:0');
    monitor.end('t:0');
    c.advance(60_000);
    expect(monitor.live(undefined).ok).toBe(true);
  });

  it('fails liveness when a busy lane makes no progress for longer than the stall limit', () => {
    const c = clock();
    const monitor = new ProgressMonitor(5_000, c.now);
    monitor.begin('t:0');
    c.advance(5_000);
    expect(monitor.live(undefined).ok).toBe(true);
    c.advance(1);
    expect(monitor.live(undefined)).toEqual({ ok: false, detail: 'stuck: t:0 made no progress for 5001 ms' });
  });

  it('progress of a lane keeps it live; another lane progressing does not', () => {
    const c = clock();
    const monitor = new ProgressMonitor(5_000, c.now);
    monitor.begin('t:0');
    monitor.begin('t:1');
    for (let i = 0; i < 4; i++) {
      c.advance(3_000);
      monitor.progress('t:1');
    }
    expect(monitor.stalledFor()).toEqual({ lane: 't:0', ms: 12_000 });
    expect(monitor.live(undefined).ok).toBe(false);
    monitor.progress('t:0');
    expect(monitor.live(undefined).ok).toBe(true);
  });

  it('is live while the gate holds consumption paused', () => {
    const c = clock();
    const monitor = new ProgressMonitor(5_000, c.now);
    monitor.begin('t:0');
    c.advance(60_000);
    expect(monitor.live('insufficient_funds')).toEqual({ ok: true, detail: 'paused: insufficient_funds' });
  });

  it('records the time of the last progress (for the last-progress gauge)', () => {
    const c = clock();
    const monitor = new ProgressMonitor(5_000, c.now);
    c.advance(10);
    monitor.progress('t:9');
    expect(monitor.lastProgress).toBe(1_000_010);
  });
});
