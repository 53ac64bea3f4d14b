// The Grafana dashboard shipped in the chart: every query reads only metrics the worker or the
// receipts receiver exports, every subject the README promises has a panel, and the chart can ship
// it to the Grafana sidecar.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createReceiverMetrics } from '../../src/receipts/metrics.ts';
import { allPanels, asSent, dashboard, queries, queryPanels } from './dashboard.ts';
import { chartDir, ensureHelm, minimalValues, parseManifests, run, templateArgs, type K8sObject } from './helm.ts';
import { metricNames } from './promql.ts';
import { ensureBuiltTool, TOOL_BUILD_TIMEOUT_MS } from './tools.ts';

/** Every series name a registry exposes (histograms as their _bucket, _sum and _count). */
async function seriesOf(registry: Registry): Promise<Set<string>> {
  const series = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    const type = String(metric.type);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) series.add(metric.name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) series.add(metric.name + suffix);
    else series.add(metric.name);
  }
  return series;
}

/** The series of the two processes the dashboard watches: the worker and the receipts receiver (`sms-worker receipts`). */
async function exportedSeries(): Promise<{ worker: Set<string>; receipts: Set<string> }> {
  return { worker: await seriesOf(createMetrics(new Registry()).registry), receipts: await seriesOf(createReceiverMetrics(new Registry()).registry) };
}

/** Which process exports a series: the worker, the receipts receiver, or neither. */
function exporterOf(name: string, exported: { worker: Set<string>; receipts: Set<string> }): 'worker' | 'receipts' | undefined {
  if (exported.worker.has(name)) return 'worker';
  if (exported.receipts.has(name)) return 'receipts';
  return undefined;
}

describe('Grafana dashboard helm/sms-worker/dashboards/sms-worker.json', () => {
  it('every panel query names only metrics the worker or the receipts receiver exports (one of them per query), and names at least one', async () => {
    const exported = await exportedSeries();
    const problems: string[] = [];
    const readers = { worker: 0, receipts: 0 };
    for (const { panel, expr } of queries) {
      const names = metricNames(expr);
      if (names.length === 0) problems.push(`${panel}: no metric in ${expr}`);
      const exporters = new Set(names.map((name) => exporterOf(name, exported)));
      for (const name of names) if (exporterOf(name, exported) === undefined) problems.push(`${panel}: ${name} is exported by neither the worker nor the receipts receiver`);
      // Two processes, two scrape jobs: a query mixing their series would match nothing.
      if (exporters.size > 1) problems.push(`${panel}: ${expr} mixes the worker's and the receiver's metrics`);
      for (const exporter of exporters) if (exporter !== undefined) readers[exporter] += 1;
    }
    const variables = dashboard.templating.list.filter((v) => v.type === 'query');
    for (const v of variables) {
      const query = typeof v.query === 'string' ? v.query : v.query.query;
      const metric = /^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(query)?.[1];
      if (metric === undefined || exporterOf(metric, exported) === undefined) problems.push(`variable ${v.name}: ${query} does not read an exported metric`);
    }
    expect(problems).toEqual([]);
    expect(readers.worker).toBeGreaterThan(20);
    expect(readers.receipts).toBeGreaterThanOrEqual(4);
  });

  it('every query panel has a query, on the Prometheus datasource variable, filtered by $namespace and $job (the receiver\'s by $receipts_job)', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const panel of queryPanels) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const target of panel.targets ?? []) {
        expect(target.datasource?.uid, panel.title).toBe('${datasource}');
        const expr = target.expr ?? '';
        for (const selector of expr.match(/sms_worker_\w+\{[^}]*\}/g) ?? []) {
          expect(selector, panel.title).toContain('namespace=~"$namespace", job=~"$job"');
        }
        for (const selector of expr.match(/sms_receipts_\w+\{[^}]*\}/g) ?? []) {
          expect(selector, panel.title).toContain('namespace=~"$namespace", job=~"$receipts_job"');
        }
        expect(expr, panel.title).toMatch(/sms_(worker_\w+\{namespace=~"\$namespace", job=~"\$job"|receipts_\w+\{namespace=~"\$namespace", job=~"\$receipts_job")/);
      }
    }
    expect(dashboard.templating.list.find((v) => v.name === 'receipts_job')).toMatchObject({
      type: 'query',
      query: { query: 'label_values(sms_receipts_rejected_total{namespace=~"$namespace"}, job)' },
    });
    const ids = allPanels(dashboard.panels).map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('covers throughput by outcome, latency percentiles, spend, lag, pauses, breaker, dead letters and UNKNOWN outcomes', () => {
    const all = queries.map((q) => q.expr).join('\n');
    expect(all).toMatch(/sum by \(outcome\) \(rate\(sms_worker_results_total/);
    expect(all).toMatch(/histogram_quantile\(0\.99, sum by \(le\) \(rate\(sms_worker_provider_request_duration_seconds_bucket/);
    expect(all).toMatch(/histogram_quantile\(0\.99, sum by \(le\) \(rate\(sms_worker_commit_duration_seconds_bucket/);
    expect(all).toMatch(/sum by \(account, region, upstream\) \(rate\(sms_worker_charged_amount_micros_total/);
    expect(all).toMatch(/sum by \(region, upstream\) \(rate\(sms_worker_billed_messages_total/);
    expect(all).toMatch(/sms_worker_consumer_lag/);
    expect(all).toMatch(/max by \(reason\) \(sms_worker_paused/);
    expect(all).toMatch(/sms_worker_paused\{[^}]*reason="circuit_open"/);
    expect(all).toMatch(/sms_worker_dead_lettered_total/);
    expect(all).toMatch(/sms_worker_results_total\{[^}]*outcome="UNKNOWN"/);
  });

  it('shows the paused routes and for how long, refusals by code and scope, and the funds ceiling, in the pauses row', () => {
    const rowIndex = dashboard.panels.findIndex((p) => p.type === 'row' && p.title === 'Pauses and circuit breaker');
    expect(rowIndex).toBeGreaterThan(-1);
    const next = dashboard.panels.slice(rowIndex + 1).findIndex((p) => p.type === 'row');
    const inRow = dashboard.panels.slice(rowIndex + 1, next === -1 ? undefined : rowIndex + 1 + next);
    const exprs = inRow.flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? '')).join('\n');
    // One row per route (the longest pause over the pods), as its age: pods and other labels summed away.
    expect(exprs).toMatch(/time\(\) - min by \(account, operation, region\) \(sms_worker_route_paused_since_timestamp_seconds\{/);
    expect(exprs).toMatch(/sum by \(account, code, scope\) \(rate\(sms_worker_refusals_total\{/);
    expect(exprs).toMatch(/sms_worker_paused_routes\{/);
    expect(exprs).toMatch(/sms_worker_funds_cost_ceiling\{/);
    const table = inRow.find((p) => p.type === 'table');
    expect(table?.targets?.[0]).toMatchObject({ instant: true, format: 'table', expr: expect.stringContaining('sms_worker_route_paused_since_timestamp_seconds') });
    // Every panel of the row lies inside it: below the row and above the next one.
    const nextRowY = next === -1 ? Infinity : (dashboard.panels[rowIndex + 1 + next]?.gridPos?.y ?? Infinity);
    for (const panel of inRow) {
      expect(panel.gridPos?.y, panel.title).toBeGreaterThan(dashboard.panels[rowIndex]?.gridPos?.y ?? 0);
      expect((panel.gridPos?.y ?? 0) + (panel.gridPos?.h ?? 0), panel.title).toBeLessThanOrEqual(nextRowY);
    }
  });

  it('shows time to send (published → call starts) p50/p99 in the row of the provider latency, beside it', () => {
    const panel = queryPanels.find((p) => p.title === 'Time to send (published → call starts) p50/p99');
    const exprs = (panel?.targets ?? []).map((t) => t.expr);
    expect(exprs).toEqual([
      expect.stringMatching(/^histogram_quantile\(0\.5, sum by \(le\) \(rate\(sms_worker_time_to_send_seconds_bucket\{/),
      expect.stringMatching(/^histogram_quantile\(0\.99, sum by \(le\) \(rate\(sms_worker_time_to_send_seconds_bucket\{/),
    ]);
    const latency = queryPanels.find((p) => p.title === 'Provider request latency (all attempts)');
    expect(panel?.gridPos?.y).toBe(latency?.gridPos?.y);
    expect((panel?.gridPos?.x ?? 0) + (panel?.gridPos?.w ?? 0)).toBe(latency?.gridPos?.x);
  });

  it('shows time to send p50/p99 and results by priority (high: the priority topic, normal: the command topic) in the time-to-send row', () => {
    const rowIndex = dashboard.panels.findIndex((p) => p.type === 'row' && p.title === 'Time to send and provider latency');
    expect(rowIndex).toBeGreaterThan(-1);
    const next = dashboard.panels.slice(rowIndex + 1).findIndex((p) => p.type === 'row');
    const inRow = dashboard.panels.slice(rowIndex + 1, next === -1 ? undefined : rowIndex + 1 + next);
    const timeToSend = inRow.find((p) => p.title === 'Time to send by priority p50/p99');
    expect((timeToSend?.targets ?? []).map((t) => t.expr)).toEqual([
      expect.stringMatching(/^histogram_quantile\(0\.5, sum by \(le, priority\) \(rate\(sms_worker_time_to_send_seconds_bucket\{/),
      expect.stringMatching(/^histogram_quantile\(0\.99, sum by \(le, priority\) \(rate\(sms_worker_time_to_send_seconds_bucket\{/),
    ]);
    const results = inRow.find((p) => p.title === 'Results by priority and outcome');
    expect(results?.targets?.[0]?.expr).toMatch(/^sum by \(priority, outcome\) \(rate\(sms_worker_results_total\{/);
    // Side by side, below the row's other panels and above the next row.
    expect(timeToSend?.gridPos?.y).toBe(results?.gridPos?.y);
    const nextRowY = next === -1 ? Infinity : (dashboard.panels[rowIndex + 1 + next]?.gridPos?.y ?? Infinity);
    for (const panel of inRow) expect((panel.gridPos?.y ?? 0) + (panel.gridPos?.h ?? 0), panel.title).toBeLessThanOrEqual(nextRowY);
  });

  it('shows the p99 of each stage of the time to send, by priority, in the time-to-send row', () => {
    const rowIndex = dashboard.panels.findIndex((p) => p.type === 'row' && p.title === 'Time to send and provider latency');
    const next = dashboard.panels.slice(rowIndex + 1).findIndex((p) => p.type === 'row');
    const inRow = dashboard.panels.slice(rowIndex + 1, next === -1 ? undefined : rowIndex + 1 + next);
    const stages = inRow.find((p) => p.title === 'Time to send by stage, p99 of each');
    expect((stages?.targets ?? []).map((t) => t.expr)).toEqual([
      expect.stringMatching(/^histogram_quantile\(0\.99, sum by \(le, priority, stage\) \(rate\(sms_worker_send_stage_seconds_bucket\{/),
    ]);
    const nextRowY = next === -1 ? Infinity : (dashboard.panels[rowIndex + 1 + next]?.gridPos?.y ?? Infinity);
    expect((stages?.gridPos?.y ?? 0) + (stages?.gridPos?.h ?? 0)).toBeLessThanOrEqual(nextRowY);
  });

  it('has a "Delivery receipts" row: receipts by status and region, delivery time percentiles, rejected posts by reason, publish latency', () => {
    const rowIndex = dashboard.panels.findIndex((p) => p.type === 'row' && p.title === 'Delivery receipts');
    expect(rowIndex).toBeGreaterThan(-1);
    const next = dashboard.panels.slice(rowIndex + 1).findIndex((p) => p.type === 'row');
    const inRow = dashboard.panels.slice(rowIndex + 1, next === -1 ? undefined : rowIndex + 1 + next);
    const exprs = inRow.flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? '')).join('\n');
    expect(exprs).toMatch(/sum by \(status, region\) \(rate\(sms_receipts_receipts_total/);
    expect(exprs).toMatch(/histogram_quantile\(0\.99, sum by \(le\) \(rate\(sms_receipts_delivery_seconds_bucket/);
    expect(exprs).toMatch(/sum by \(reason\) \(rate\(sms_receipts_rejected_total/);
    expect(exprs).toMatch(/histogram_quantile\(0\.99, sum by \(le\) \(rate\(sms_receipts_publish_seconds_bucket/);
  });
});

describe('chart: grafanaDashboard', { timeout: 60_000 }, () => {
  let helm: string;
  beforeAll(() => {
    helm = ensureHelm(600_000);
  }, 620_000);

  const render = (...extra: string[]): K8sObject[] => {
    const result = run(helm, templateArgs(extra));
    if (result.status !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
    return parseManifests(result.stdout);
  };

  it('is off by default', () => {
    expect(render().filter((o) => o.metadata.name.endsWith('-dashboard'))).toEqual([]);
  });

  it('renders a ConfigMap labelled for the Grafana sidecar holding exactly the dashboard file', () => {
    const objects = render('--set', 'grafanaDashboard.enabled=true', '--set', 'grafanaDashboard.annotations.grafana_folder=Messaging');
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'rel-sms-worker-dashboard') as K8sObject & { data: Record<string, string> };
    expect(configMap.metadata.labels).toMatchObject({ grafana_dashboard: '1', 'app.kubernetes.io/name': 'sms-worker' });
    expect(configMap.metadata.annotations).toEqual({ grafana_folder: 'Messaging' });
    expect(JSON.parse(configMap.data['sms-worker.json'] ?? '')).toEqual(dashboard);
  });

  it('lints with --strict when on, and goes to another namespace when asked', () => {
    const lint = run(helm, ['lint', '--strict', chartDir, '-f', minimalValues, '--set', 'grafanaDashboard.enabled=true']);
    expect(lint.status, lint.stdout + lint.stderr).toBe(0);
    const [configMap] = render('--set', 'grafanaDashboard.enabled=true', '--set', 'grafanaDashboard.namespace=monitoring').filter((o) =>
      o.metadata.name.endsWith('-dashboard'),
    );
    expect(configMap?.metadata.namespace).toBe('monitoring');
  });
});

describe('dashboard queries under the real PromQL parser', () => {
  let promtool = '';
  beforeAll(() => {
    promtool = ensureBuiltTool('promtool');
  }, TOOL_BUILD_TIMEOUT_MS + 10_000);

  it('promtool check rules accepts every panel query (as Grafana sends it) as a recording rule', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sms-worker-dashboard-'));
    try {
      const rules = queries.map((q, index) => ({ record: `dashboard:query_${index}`, expr: asSent(q.expr, { rateInterval: '2m', range: '6h', namespace: '.*', job: '.*', receiptsJob: '.*' }) }));
      writeFileSync(path.join(dir, 'dashboard.rules.yaml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
      const check = spawnSync(promtool, ['check', 'rules', 'dashboard.rules.yaml'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
      expect(check.status, `${check.stdout}\n${check.stderr}`).toBe(0);
      expect(check.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
