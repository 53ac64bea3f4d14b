/**
 * The worker's sms_worker_send_stage_seconds (where its time to send went) over a measured
 * window: read from two scrapes of its /metrics, per stage of one priority, the mean and the
 * bucket that holds the 99th percentile (a histogram's buckets bound a percentile, they do not
 * give it). Pure: parsing and arithmetic on Prometheus text.
 */
import { SEND_STAGES, type SendStage } from '../../src/worker/time-to-send.ts';

/** One stage's histogram at one scrape: its sum (s), count and cumulative buckets by upper bound. */
export interface StageHistogram {
  readonly sum: number;
  readonly count: number;
  readonly buckets: ReadonlyMap<number, number>;
}

export type StageScrape = Partial<Record<SendStage, StageHistogram>>;

/** The stages of `priority` in a /metrics text (absent stages: none observed yet). */
export function parseSendStages(text: string, priority: string): StageScrape {
  const out: Partial<Record<SendStage, { sum: number; count: number; buckets: Map<number, number> }>> = {};
  const entry = (stage: SendStage) => (out[stage] ??= { sum: 0, count: 0, buckets: new Map() });
  const line = /^sms_worker_send_stage_seconds_(bucket|sum|count)\{([^}]*)\} (\S+)$/gm;
  for (const m of text.matchAll(line)) {
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    const stage = labels['stage'] as SendStage | undefined;
    if (labels['priority'] !== priority || stage === undefined || !SEND_STAGES.includes(stage)) continue;
    const value = Number(m[3]);
    if (m[1] === 'sum') entry(stage).sum = value;
    else if (m[1] === 'count') entry(stage).count = value;
    else entry(stage).buckets.set(labels['le'] === '+Inf' ? Number.POSITIVE_INFINITY : Number(labels['le']), value);
  }
  return out;
}

/** One stage over the window: commands observed, mean ms, and the upper bound (ms) of the bucket holding the p99. */
export interface StageFigure {
  readonly count: number;
  readonly meanMs: number;
  readonly p99AtMostMs: number;
}

export function stagesOver(from: StageScrape, to: StageScrape): Partial<Record<SendStage, StageFigure>> {
  const out: Partial<Record<SendStage, StageFigure>> = {};
  for (const stage of SEND_STAGES) {
    const end = to[stage];
    if (end === undefined) continue;
    const start = from[stage];
    const count = end.count - (start?.count ?? 0);
    if (count <= 0) continue;
    const bounds = [...end.buckets.keys()].sort((a, b) => a - b);
    const within = (le: number): number => (end.buckets.get(le) ?? 0) - (start?.buckets.get(le) ?? 0);
    const p99 = bounds.find((le) => within(le) >= 0.99 * count) ?? Number.POSITIVE_INFINITY;
    out[stage] = { count, meanMs: ((end.sum - (start?.sum ?? 0)) / count) * 1000, p99AtMostMs: p99 * 1000 };
  }
  return out;
}

/** "delivery 3 ms (p99 ≤ 25 ms), preparation …": the stages in order. */
export function stagesText(stages: Partial<Record<SendStage, StageFigure>>): string {
  const parts = SEND_STAGES.flatMap((stage) => {
    const s = stages[stage];
    if (s === undefined) return [];
    const p99 = Number.isFinite(s.p99AtMostMs) ? `≤ ${formatMs(s.p99AtMostMs)}` : '> the largest bucket';
    return [`${stage} ${formatMs(s.meanMs)} (p99 ${p99})`];
  });
  return parts.length === 0 ? 'not read' : parts.join(', ');
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
}
