// The Grafana dashboard shipped in the chart, as the dashboard tests read it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chartDir } from './helm.ts';

export interface Target {
  expr?: string;
  instant?: boolean;
  format?: string;
  datasource?: { type?: string; uid?: string };
}
export interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Target[];
  datasource?: { type?: string; uid?: string };
  gridPos?: { h: number; w: number; x: number; y: number };
  panels?: Panel[];
}
export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string | { query: string } }[] };
}

export const dashboardFile = path.join(chartDir, 'dashboards', 'sms-worker.json');
export const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as Dashboard;

export function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}
export const queryPanels = allPanels(dashboard.panels).filter((p) => p.type !== 'row' && p.type !== 'text');
export const queries = queryPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr ?? '' })));

/**
 * A query as Prometheus receives it from Grafana: the dashboard's variables replaced by these
 * values (`$job`: the workers' scrape job; `$receipts_job`: the receipts receiver's).
 */
export function asSent(expr: string, values: { rateInterval: string; range: string; namespace: string; job: string; receiptsJob: string }): string {
  return expr
    .replaceAll('$__rate_interval', values.rateInterval)
    .replaceAll('$__range', values.range)
    .replaceAll('$namespace', values.namespace)
    .replaceAll('$receipts_job', values.receiptsJob)
    .replaceAll('$job', values.job);
}
