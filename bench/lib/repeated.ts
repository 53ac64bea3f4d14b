/**
 * `--repeat N`: the change sections (rolling update, scale, start-up) run N times, and each
 * timing target is judged on the median of the N runs, with the min and max beside it: on two
 * shared cores one run's verdict on a 250 ms target is noise (issues 23, 26 and 53). The counts
 * that must be 0 (UNKNOWN, sent twice, lost) are summed over the runs instead: one is one too many.
 */
import { CHANGE_TARGETS, START_UP_FACTOR, type PhaseFigures } from './change-figures.ts';
import type { ChangeRunFigures } from './change-run.ts';
import type { ChangeSectionFigures } from './change-sections.ts';
import { fmt, ms } from './markdown.ts';
import { median } from './stats.ts';

export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: number;
}

/** Median, min and max of the values that are numbers (NaN: a run without that figure). */
export function spread(values: readonly number[]): Spread {
  const known = values.filter((v) => !Number.isNaN(v));
  if (known.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, runs: 0 };
  return { median: median(known), min: Math.min(...known), max: Math.max(...known), runs: known.length };
}

const verdict = (ok: boolean): string => (ok ? 'MET' : 'NOT MET');
const msSpread = (s: Spread): string => `median ${ms(s.median)} (min ${ms(s.min)}, max ${ms(s.max)})`;

/** The change phase's targets judged on medians, and the counts summed. */
export function repeatedChangeLine(title: string, runs: readonly ChangeRunFigures[]): string {
  const change = runs.map((r) => r.change);
  const steady = spread(runs.map((r) => r.steady.timeToSendP99Ms));
  const p99 = spread(change.map((p) => p.timeToSendP99Ms));
  const max = spread(change.map((p) => p.timeToSendMaxMs));
  const silence = spread(change.map((p) => p.longestSilenceMs));
  const sum = (pick: (p: PhaseFigures) => number): number => change.reduce((n, p) => n + pick(p), 0);
  const t = CHANGE_TARGETS;
  const timeToSend =
    runs[0]?.rate === undefined
      ? `time to send p99 ${msSpread(p99)} ≤ ${t.timeToSendP99Ms} ms: ${verdict(p99.median <= t.timeToSendP99Ms)}; max ${msSpread(max)} ≤ ${fmt(t.timeToSendMaxMs)} ms: ${verdict(max.median <= t.timeToSendMaxMs)}`
      : `time to send p99 ${msSpread(p99)} (a binding rate limit: the queue, not judged)`;
  return `- ${title}, ${runs.length} runs, judged on the median: ${timeToSend}; longest silence ${msSpread(silence)} ≤ ${fmt(t.silenceMs)} ms: ${verdict(silence.median <= t.silenceMs)}; over all runs UNKNOWN ${sum((p) => p.unknown)}, sent twice ${sum((p) => p.sentTwice)}, lost ${sum((p) => p.lost)}: ${verdict(sum((p) => p.unknown + p.sentTwice + p.lost) === 0)} (steady p99 before the change ${msSpread(steady)})`;
}

/** Start-up ÷ steady per run (the first seconds' p99 over the steady p99), judged on the median. */
export function repeatedStartUpLine(ratios: readonly number[]): string {
  const s = spread(ratios);
  const x = (v: number): string => `${fmt(v, 1)}×`;
  return `- start-up, ${ratios.length} runs, judged on the median: first seconds' p99 ÷ steady p99 median ${x(s.median)} (min ${x(s.min)}, max ${x(s.max)}; runs ${ratios.map(x).join(', ')}) ≤ ${START_UP_FACTOR}×: ${verdict(s.median <= START_UP_FACTOR)}`;
}

/** The summary of N runs of the change sections (nothing for a single run). */
export function repeatedChangeLines(runs: readonly ChangeSectionFigures[]): string[] {
  if (runs.length < 2) return [];
  const lines: string[] = [];
  const sections: [string, (f: ChangeSectionFigures) => ChangeRunFigures | undefined][] = [
    ['rolling update', (f) => f.rollingUpdate],
    ['scale 1 → 3 → 1', (f) => f.scale],
    ['scale 1 → 3 → 1 with a binding rate limit', (f) => f.scaleLimited],
  ];
  for (const [title, pick] of sections) {
    const of = runs.map(pick).filter((r): r is ChangeRunFigures => r !== undefined);
    if (of.length > 0) lines.push(repeatedChangeLine(title, of));
  }
  const ratios = runs.flatMap((f) => {
    const first = f.startUp?.warmup;
    return f.startUp === undefined || first === undefined ? [] : [first.timeToSendP99Ms / f.startUp.timeToSendP99Ms];
  });
  if (ratios.length > 0) lines.push(repeatedStartUpLine(ratios));
  return lines;
}
