// The Grafana dashboard shipped in the chart: every query reads only metrics the worker exports,
// every subject the README promises has a panel, and the chart can ship it to the Grafana sidecar.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { allPanels, asSent, dashboard, queries, queryPanels } from './dashboard.ts';
import { chartDir, ensureHelm, parseManifests, run, templateArgs, type K8sObject } from './helm.ts';
import { metricNames } from './promql.ts';
import { ensureBuiltTool, TOOL_BUILD_TIMEOUT_MS } from './tools.ts';

/** Every series name the worker's registry exposes (histograms as their _bucket, _sum and _count). */
async function exportedSeries(): Promise<Set<string>> {
  const { registry } = createMetrics(new Registry());
  const series = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    const type = String(metric.type);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) series.add(metric.name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) series.add(metric.name + suffix);
    else series.add(metric.name);
  }
  return series;
}

describe('Grafana dashboard helm/sms-worker/dashboards/sms-worker.json', () => {
  it('every panel query names only metrics the worker exports, and names at least one', async () => {
    const exported = await exportedSeries();
    const problems: string[] = [];
    for (const { panel, expr } of queries) {
      const names = metricNames(expr);
      if (names.length === 0) problems.push(`${panel}: no metric in ${expr}`);
      for (const name of names) if (!exported.has(name)) problems.push(`${panel}: ${name} is not exported by the worker`);
    }
    const variables = dashboard.templating.list.filter((v) => v.type === 'query');
    for (const v of variables) {
      const query = typeof v.query === 'string' ? v.query : v.query.query;
      const metric = /^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(query)?.[1];
      if (metric === undefined || !exported.has(metric)) problems.push(`variable ${v.name}: ${query} does not read an exported metric`);
    }
    expect(problems).toEqual([]);
    expect(queries.length).toBeGreaterThan(20);
  });

  it('every query panel has a query, on the Prometheus datasource variable, filtered by $namespace and $job', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const panel of queryPanels) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const target of panel.targets ?? []) {
        expect(target.datasource?.uid, panel.title).toBe('${datasource}');
        for (const selector of (target.expr ?? '').match(/sms_worker_\w+\{[^}]*\}/g) ?? []) {
          expect(selector, panel.title).toContain('namespace=~"$namespace", job=~"$job"');
        }
        expect(target.expr, panel.title).toMatch(/sms_worker_\w+\{namespace=~"\$namespace", job=~"\$job"/);
      }
    }
    const ids = allPanels(dashboard.panels).map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('covers throughput by outcome, latency percentiles, spend, lag, pauses, breaker, dead letters and UNKNOWN outcomes', () => {
    const all = queries.map((q) => q.expr).join('\n');
    expect(all).toMatch(/sum by \(outcome\) \(rate\(sms_worker_results_total/);
    expect(all).toMatch(/histogram_quantile\(0\.99, sum by \(le\) \(rate\(sms_worker_provider_request_duration_seconds_bucket/);
    expect(all).toMatch(/histogram_quantile\(0\.99, sum by \(le\) \(rate\(sms_worker_commit_duration_seconds_bucket/);
    expect(all).toMatch(/sum by \(region, upstream\) \(rate\(sms_worker_charged_amount_micros_total/);
    expect(all).toMatch(/sum by \(region, upstream\) \(rate\(sms_worker_billed_messages_total/);
    expect(all).toMatch(/sms_worker_consumer_lag/);
    expect(all).toMatch(/max by \(reason\) \(sms_worker_paused/);
    expect(all).toMatch(/sms_worker_paused\{[^}]*reason="circuit_open"/);
    expect(all).toMatch(/sms_worker_dead_lettered_total/);
    expect(all).toMatch(/sms_worker_results_total\{[^}]*outcome="UNKNOWN"/);
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
    const lint = run(helm, ['lint', '--strict', chartDir, '--set', 'grafanaDashboard.enabled=true']);
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
      const rules = queries.map((q, index) => ({ record: `dashboard:query_${index}`, expr: asSent(q.expr, { rateInterval: '2m', range: '6h', namespace: '.*', job: '.*' }) }));
      writeFileSync(path.join(dir, 'dashboard.rules.yaml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
      const check = spawnSync(promtool, ['check', 'rules', 'dashboard.rules.yaml'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
      expect(check.status, `${check.stdout}\n${check.stderr}`).toBe(0);
      expect(check.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
