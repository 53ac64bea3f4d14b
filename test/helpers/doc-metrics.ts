import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DocumentedMetric {
  readonly name: string;
  /** counter, gauge or histogram (the page may add words: "gauge 0/1"). */
  readonly type: string;
  /** The label names the page gives, in order (backticked words of the labels column). */
  readonly labels: readonly string[];
}

/** The rows of the metrics table in docs/metrics.md: `| `sms_worker_…` | type | labels |`. */
export function documentedMetrics(): DocumentedMetric[] {
  const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'metrics.md'), 'utf8');
  const rows = [...page.matchAll(/^\| `(sms_worker_[a-z_]+)` \| ([a-z]+)[^|]*\|\s*([^|]*?)\s*\|$/gm)];
  return rows.map((m) => ({
    name: m[1] ?? '',
    type: m[2] ?? '',
    // Only the leading backticked names are labels; later ones in the cell are values ("`success` or failure class").
    labels: [...(m[3] ?? '').split(/\s[—(=]/)[0]!.matchAll(/`([a-z_]+)`/g)].map((l) => l[1] ?? ''),
  }));
}
