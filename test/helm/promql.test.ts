import { describe, expect, it } from 'vitest';
import { metricNames } from './promql.ts';

describe('metricNames: the metrics a PromQL expression reads', () => {
  it('finds the metric inside functions and aggregations, not the functions, labels or windows', () => {
    expect(metricNames('sum by (outcome) (rate(sms_worker_results_total{namespace=~"$namespace", outcome!="SENT"}[$__rate_interval]))')).toEqual([
      'sms_worker_results_total',
    ]);
  });

  it('finds both sides of binary operators and vector matching, ignoring on/ignoring/group_left label lists', () => {
    expect(
      metricNames('(time() - max by (namespace) (a_seconds{job="x"}) > 600) and on (namespace) (sum by (namespace) (b_lag) > 0) / ignoring (le) group_left (pod) c_total'),
    ).toEqual(['a_seconds', 'b_lag', 'c_total']);
  });

  it('ignores numbers, scientific notation, durations, offsets, keywords and quoted text', () => {
    expect(metricNames('sum(rate(x_total[5m] offset 1h)) * 3600 / 1e6 > bool 0.5 unless y_total{a="b{c}"}')).toEqual(['x_total', 'y_total']);
  });

  it('reads histogram series and subqueries', () => {
    expect(metricNames('histogram_quantile(0.99, sum by (le) (rate(h_seconds_bucket[5m])))')).toEqual(['h_seconds_bucket']);
    expect(metricNames('deriv((sum(lag))[15m:1m]) > 0')).toEqual(['lag']);
  });

  it('finds the metric of absent() and of a bare selector', () => {
    expect(metricNames('absent(up_total{job="w"})')).toEqual(['up_total']);
    expect(metricNames('sms_worker_paused')).toEqual(['sms_worker_paused']);
  });
});
