// The chart's alerts, proven with promtool: the rendered PrometheusRule passes `promtool check
// rules`, and `promtool test rules` shows each alert firing on series that should fire it and
// staying silent on series that should not. promtool is built from the Go module proxy by
// scripts/ensure-promtool.sh on first use and cached (several minutes cold).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ensureHelm, everythingOnValues, namespace, parseManifests, releaseName, run, templateArgs, type K8sObject } from './helm.ts';
import { ensureBuiltTool, TOOL_BUILD_TIMEOUT_MS } from './tools.ts';

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleGroup {
  name: string;
  rules: Rule[];
}

/** One `promtool test rules` test group: input series and what must (or must not) fire when. */
interface Case {
  readonly series: Readonly<Record<string, string>>;
  readonly at: string;
  /** Labels of each alert expected to fire (severity included); empty: must stay silent. */
  readonly fires: readonly Readonly<Record<string, string>>[];
}

const job = `${releaseName}-sms-worker`;
const release = `namespace="${namespace}", job="${job}"`;
const topic = 'sms.commands';
/** The receipts receiver's scrape job (its Service name) and series matcher. */
const receiptsJob = `${releaseName}-sms-worker-receipts`;
const receipts = `namespace="${namespace}", job="${receiptsJob}"`;
/** The receipts receiver on: its rules exist only then. */
const RECEIPTS_ON = ['--set', 'receipts.enabled=true', '--set', 'receipts.secrets.pathToken=alerts-test-token-0123456789'] as const;

/** A firing case and a silent case for every alert the chart renders with its defaults and the receipts receiver on. */
const CASES: Record<string, { fires: Case; silent: Case }> = {
  SmsWorkerConsumerLagGrowing: {
    // 100 more records a minute: above 1000 from minute 11, growing, and for 15m by minute 26.
    fires: {
      series: {
        [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="a"}`]: '0+100x60',
        // The same partition reported by a second pod is counted once.
        [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="b"}`]: '0+100x60',
      },
      at: '40m',
      fires: [{ namespace, topic, severity: 'warning' }],
    },
    // High but steady: the workers keep up.
    silent: { series: { [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="a"}`]: '5000x60' }, at: '40m', fires: [] },
  },
  SmsWorkerDeadLettering: {
    fires: {
      series: { [`sms_worker_dead_lettered_total{${release}, reason="UNDECODABLE", pod="a"}`]: '0x5 1+1x30' },
      at: '20m',
      fires: [{ namespace, severity: 'warning' }],
    },
    silent: { series: { [`sms_worker_dead_lettered_total{${release}, reason="UNDECODABLE", pod="a"}`]: '3x40' }, at: '20m', fires: [] },
  },
  SmsWorkerPausedInsufficientFunds: {
    fires: { series: { [`sms_worker_paused{${release}, reason="insufficient_funds", pod="a"}`]: '1x20' }, at: '10m', fires: [{ namespace, severity: 'critical' }] },
    // Paused for 4 minutes: still pending (for: 5m).
    silent: { series: { [`sms_worker_paused{${release}, reason="insufficient_funds", pod="a"}`]: '1x20' }, at: '4m', fires: [] },
  },
  SmsWorkerCircuitOpen: {
    fires: { series: { [`sms_worker_paused{${release}, reason="circuit_open", pod="a"}`]: '1x30' }, at: '15m', fires: [{ namespace, severity: 'warning' }] },
    // Open for 8 minutes: pending (for: 10m); and another pause reason does not count.
    silent: {
      series: {
        [`sms_worker_paused{${release}, reason="circuit_open", pod="a"}`]: '1x30',
        [`sms_worker_paused{${release}, reason="throttled", pod="b"}`]: '1x30',
      },
      at: '8m',
      fires: [],
    },
  },
  SmsWorkerPartitionLost: {
    fires: { series: { [`sms_worker_lost_partitions{${release}, pod="a"}`]: '0 1x20' }, at: '10m', fires: [{ namespace, pod: 'a', severity: 'warning' }] },
    // Lost for 3 minutes, then reclaimed (or given back at a rebalance): silent.
    silent: { series: { [`sms_worker_lost_partitions{${release}, pod="a"}`]: '0 1 1 1 0x20' }, at: '10m', fires: [] },
  },
  SmsWorkerProtocolViolation: {
    // One violation at minute 3: fires at once, per pod and invariant, and for the hour after.
    fires: {
      series: { [`sms_worker_protocol_violations_total{${release}, invariant="calls-hold-slots", pod="a"}`]: '0 0 0 1x20' },
      at: '10m',
      fires: [{ namespace, pod: 'a', invariant: 'calls-hold-slots', severity: 'critical' }],
    },
    // None (the counter flat at zero), or one over an hour ago.
    silent: {
      series: {
        [`sms_worker_protocol_violations_total{${release}, invariant="calls-hold-slots", pod="a"}`]: '0x80',
        [`sms_worker_protocol_violations_total{${release}, invariant="offset-only-forward", pod="b"}`]: '0 1x80',
      },
      at: '80m',
      fires: [],
    },
  },
  SmsWorkerProviderRejecting: {
    fires: { series: { [`sms_worker_paused{${release}, reason="provider_rejecting", pod="a"}`]: '1x20' }, at: '10m', fires: [{ namespace, severity: 'critical' }] },
    silent: {
      series: {
        [`sms_worker_paused{${release}, reason="provider_rejecting", pod="a"}`]: '0x20',
        [`sms_worker_paused{${release}, reason="insufficient_funds", pod="a"}`]: '1x20',
      },
      at: '10m',
      fires: [],
    },
  },
  SmsWorkerRoutePaused: {
    // text → AU paused on default since minute 1 on pod a (and since minute 10 on pod b: one alert,
    // the longer pause); at minute 20 that is 19 minutes > 15. The same route on backup, paused 5
    // minutes, and voice → CN, paused 5 minutes, do not fire: a route is paused per account.
    fires: {
      series: {
        [`sms_worker_route_paused_since_timestamp_seconds{${release}, account="default", operation="text", region="AU", pod="a"}`]: '_ 60x40',
        [`sms_worker_route_paused_since_timestamp_seconds{${release}, account="default", operation="text", region="AU", pod="b"}`]: '_x10 600x30',
        [`sms_worker_route_paused_since_timestamp_seconds{${release}, account="backup", operation="text", region="AU", pod="a"}`]: '_x15 900x30',
        [`sms_worker_route_paused_since_timestamp_seconds{${release}, account="default", operation="voice", region="CN", pod="a"}`]: '_x15 900x30',
      },
      at: '20m',
      fires: [{ namespace, account: 'default', operation: 'text', region: 'AU', severity: 'warning' }],
    },
    // Paused 9 minutes (since minute 11); and a route paused from minute 0, resumed at minute 16
    // (its series removed: a stale marker), seen at minute 17 when it would have been 17 minutes.
    silent: {
      series: {
        [`sms_worker_route_paused_since_timestamp_seconds{${release}, operation="text", region="AU+NZ", pod="a"}`]: '_x11 660x30',
        [`sms_worker_route_paused_since_timestamp_seconds{${release}, operation="text", region="GB", pod="a"}`]: '0x15 stale',
        [`sms_worker_route_paused_since_timestamp_seconds{namespace="${namespace}", job="another-worker", operation="text", region="FR", pod="x"}`]: '0x30',
      },
      at: '17m',
      fires: [],
    },
  },
  SmsWorkerAccountFailingOver: {
    // Commands leave account default every minute from minute 1 (two pods): after 15 minutes of
    // that it fires, per account; backup's one failover at minute 3 does not.
    fires: {
      series: {
        [`sms_worker_failovers_total{${release}, account="default", reason="funds", pod="a"}`]: '0+2x30',
        [`sms_worker_failovers_total{${release}, account="default", reason="paused", pod="b"}`]: '0+5x30',
        [`sms_worker_failovers_total{${release}, account="backup", reason="no-route", pod="a"}`]: '0 0 0 1x27',
      },
      at: '25m',
      fires: [{ namespace, account: 'default', severity: 'warning' }],
    },
    // Failing over for 10 minutes, then not any more (topped up): silent at minute 20 and before 15.
    silent: {
      series: { [`sms_worker_failovers_total{${release}, account="default", reason="funds", pod="a"}`]: '0+3x10 30x20' },
      at: '20m',
      fires: [],
    },
  },
  SmsWorkerAccountPaused: {
    // backup paused for its funds from minute 1 on pod a: fires after 10 minutes; default's own
    // pause is left to its own alerts.
    fires: {
      series: {
        [`sms_worker_account_paused{${release}, account="backup", reason="insufficient_funds", pod="a"}`]: '0 1x30',
        [`sms_worker_account_paused{${release}, account="default", reason="insufficient_funds", pod="a"}`]: '1x30',
      },
      at: '15m',
      fires: [{ namespace, account: 'backup', reason: 'insufficient_funds', severity: 'warning' }],
    },
    // Paused 8 minutes, then resumed: silent.
    silent: {
      series: { [`sms_worker_account_paused{${release}, account="backup", reason="circuit_open", pod="a"}`]: '0 1x8 0x20' },
      at: '12m',
      fires: [],
    },
  },
  SmsWorkerPumpingSuspected: {
    // A prefix of GB blocked at minute 3 (one block started): fires at once, per kind and region.
    fires: {
      series: {
        [`sms_worker_velocity_blocks_total{${release}, kind="prefix", region="GB", pod="a"}`]: '0 0 0 1 1 1 1 1',
        [`sms_worker_velocity_blocks_total{${release}, kind="region", region="CN", pod="a"}`]: '0x8',
      },
      at: '5m',
      fires: [{ namespace, kind: 'prefix', region: 'GB', severity: 'warning' }],
    },
    // Blocks long ago (the counter flat for the last 15m), and another deployment's.
    silent: {
      series: {
        [`sms_worker_velocity_blocks_total{${release}, kind="prefix", region="GB", pod="a"}`]: '4x30',
        [`sms_worker_velocity_blocks_total{namespace="${namespace}", job="another-worker", kind="prefix", region="GB", pod="x"}`]: '0+1x30',
      },
      at: '25m',
      fires: [],
    },
  },
  SmsWorkerSpendCapReached: {
    fires: { series: { [`sms_worker_paused{${release}, reason="spend_cap", pod="a"}`]: '0 0 1x20' }, at: '5m', fires: [{ namespace, severity: 'warning' }] },
    // Paused for less than a minute, then resumed; and another pause reason does not count.
    silent: {
      series: {
        [`sms_worker_paused{${release}, reason="spend_cap", pod="a"}`]: '0 0 1 0x20',
        [`sms_worker_paused{${release}, reason="insufficient_funds", pod="b"}`]: '1x20',
      },
      at: '10m',
      fires: [],
    },
  },
  SmsWorkerUnknownOutcomes: {
    fires: {
      series: { [`sms_worker_results_total{${release}, operation="text", outcome="UNKNOWN", code="TIMEOUT", pod="a"}`]: '0 0 0 1 1 1 1 1' },
      at: '5m',
      fires: [{ namespace, severity: 'warning' }],
    },
    // Many results, none UNKNOWN.
    silent: {
      series: {
        [`sms_worker_results_total{${release}, operation="text", outcome="SENT", code="", pod="a"}`]: '0+10x20',
        [`sms_worker_results_total{${release}, operation="text", outcome="UNKNOWN", code="TIMEOUT", pod="a"}`]: '2x20',
      },
      at: '18m',
      fires: [],
    },
  },
  SmsWorkerProviderErrorRatioHigh: {
    // 20 transport failures per 90 successes a minute through default: 18% > 10%, per account (a
    // healthy backup's 1,000 successes a minute do not hide it).
    fires: {
      series: {
        [`sms_worker_provider_requests_total{${release}, account="default", operation="text", outcome="success", pod="a"}`]: '0+90x40',
        [`sms_worker_provider_requests_total{${release}, account="default", operation="text", outcome="transport", pod="a"}`]: '0+20x40',
        [`sms_worker_provider_requests_total{${release}, account="backup", operation="text", outcome="success", pod="a"}`]: '0+1000x40',
      },
      at: '30m',
      fires: [{ namespace, account: 'default', operation: 'text', severity: 'warning' }],
    },
    // 5 per 95: 5%.
    silent: {
      series: {
        [`sms_worker_provider_requests_total{${release}, operation="text", outcome="success", pod="a"}`]: '0+95x40',
        [`sms_worker_provider_requests_total{${release}, operation="text", outcome="transport", pod="a"}`]: '0+5x40',
      },
      at: '30m',
      fires: [],
    },
  },
  SmsWorkerNoProgress: {
    // Last progress at t=60s, commands waiting: more than 600 s without progress from minute 11.
    fires: {
      series: {
        [`sms_worker_last_progress_timestamp_seconds{${release}, pod="a"}`]: '60x40',
        [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="a"}`]: '50x40',
      },
      at: '30m',
      fires: [{ namespace, severity: 'critical' }],
    },
    // Progress every minute (the timestamp keeps up with the clock) while lag exists.
    silent: {
      series: {
        [`sms_worker_last_progress_timestamp_seconds{${release}, pod="a"}`]: '0+60x40',
        [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="a"}`]: '50x40',
      },
      at: '30m',
      fires: [],
    },
  },
  SmsWorkerAbsent: {
    // Only another job's series: this release's worker is gone.
    fires: {
      series: { [`sms_worker_commands_consumed_total{namespace="${namespace}", job="another-worker", pod="x"}`]: '0+1x30' },
      at: '20m',
      fires: [{ namespace, job, severity: 'warning' }],
    },
    silent: { series: { [`sms_worker_commands_consumed_total{${release}, pod="a"}`]: '0+1x30' }, at: '20m', fires: [] },
  },
  SmsReceiptsRejectingPosts: {
    // 30 posts a minute refused as unauthorized (0.5/s > 0.05/s), for 30 minutes: a wrong token, or someone guessing.
    fires: {
      series: { [`sms_receipts_rejected_total{${receipts}, reason="unauthorized", pod="r"}`]: '0+30x40' },
      at: '30m',
      fires: [{ namespace, reason: 'unauthorized', severity: 'warning' }],
    },
    // One a minute (below the threshold); 503s are another alert's; another release's receiver does not count.
    silent: {
      series: {
        [`sms_receipts_rejected_total{${receipts}, reason="unauthorized", pod="r"}`]: '0+1x40',
        [`sms_receipts_rejected_total{${receipts}, reason="kafka_unavailable", pod="r"}`]: '0+60x40',
        [`sms_receipts_rejected_total{namespace="${namespace}", job="another-receiver", reason="invalid", pod="x"}`]: '0+60x40',
      },
      at: '30m',
      fires: [],
    },
  },
  SmsReceiptsPublishFailing: {
    // Posts answered 503 (Kafka did not acknowledge) every minute from minute 6.
    fires: {
      series: { [`sms_receipts_rejected_total{${receipts}, reason="kafka_unavailable", pod="r"}`]: '0x5 1+2x30' },
      at: '20m',
      fires: [{ namespace, severity: 'critical' }],
    },
    // Four 503s long ago (a Kafka restart that is over), and refusals of another kind.
    silent: {
      series: {
        [`sms_receipts_rejected_total{${receipts}, reason="kafka_unavailable", pod="r"}`]: '0 4x40',
        [`sms_receipts_rejected_total{${receipts}, reason="unauthorized", pod="r"}`]: '0+10x40',
      },
      at: '20m',
      fires: [],
    },
  },
  SmsReceiptsAbsent: {
    // The workers and another release's receiver are scraped; this release's receiver is not.
    fires: {
      series: {
        [`sms_worker_commands_consumed_total{${release}, pod="a"}`]: '0+1x30',
        [`sms_receipts_rejected_total{namespace="${namespace}", job="another-receiver", reason="invalid", pod="x"}`]: '0x30',
      },
      at: '20m',
      fires: [{ namespace, job: receiptsJob, severity: 'warning' }],
    },
    silent: { series: { [`sms_receipts_rejected_total{${receipts}, reason="unauthorized", pod="r"}`]: '0x30' }, at: '20m', fires: [] },
  },
};

/** The high-priority command topic on (topics.priorityCommand): its alerts and lag terms exist only then. */
const priorityTopic = 'sms.codes';
const PRIORITY_ON = ['--set', `topics.priorityCommand=${priorityTopic}`] as const;
/** The buckets of a time-to-send histogram series: `le` → values. */
function timeToSend(labels: string, buckets: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(buckets).map(([le, values]) => [`sms_worker_time_to_send_seconds_bucket{${release}, ${labels}, le="${le}"}`, values]));
}

/**
 * With the priority topic on: a firing and a silent case for each alert that changes or appears
 * (the CASES above must still hold for the command topic, and are run with these).
 */
const PRIORITY_CASES: Record<string, { fires: Case; silent: Case }> = {
  SmsWorkerConsumerLagGrowing: {
    // The priority topic's own threshold (100): 10 more codes a minute, 400 at minute 40 (far
    // below the command topic's 1000), growing for more than 15m; the command topic steady.
    fires: {
      series: {
        [`sms_worker_consumer_lag{${release}, topic="${priorityTopic}", partition="0", pod="a"}`]: '0+10x60',
        [`sms_worker_consumer_lag{${release}, topic="${priorityTopic}", partition="0", pod="b"}`]: '0+10x60',
        [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="a"}`]: '5000x60',
      },
      at: '40m',
      fires: [{ namespace, topic: priorityTopic, severity: 'warning' }],
    },
    // Codes growing but below 100 (40 at minute 40); bulk growing but below 1000; another release's codes.
    silent: {
      series: {
        [`sms_worker_consumer_lag{${release}, topic="${priorityTopic}", partition="0", pod="a"}`]: '0+1x60',
        [`sms_worker_consumer_lag{namespace="${namespace}", job="another-worker", topic="${priorityTopic}", partition="0", pod="x"}`]: '0+10x60',
        [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="a"}`]: '0+10x60',
      },
      at: '40m',
      fires: [],
    },
  },
  SmsWorkerNoProgress: {
    // No progress while only the priority topic has lag.
    fires: {
      series: {
        [`sms_worker_last_progress_timestamp_seconds{${release}, pod="a"}`]: '60x40',
        [`sms_worker_consumer_lag{${release}, topic="${priorityTopic}", partition="0", pod="a"}`]: '5x40',
        [`sms_worker_consumer_lag{${release}, topic="${topic}", partition="0", pod="a"}`]: '0x40',
      },
      at: '30m',
      fires: [{ namespace, severity: 'critical' }],
    },
    // No progress, but neither command topic has lag (a topic only resembling one: the regex's dot is literal).
    silent: {
      series: {
        [`sms_worker_last_progress_timestamp_seconds{${release}, pod="a"}`]: '60x40',
        [`sms_worker_consumer_lag{${release}, topic="${priorityTopic}", partition="0", pod="a"}`]: '0x40',
        [`sms_worker_consumer_lag{${release}, topic="smsXcodes", partition="0", pod="a"}`]: '50x40',
      },
      at: '30m',
      fires: [],
    },
  },
  SmsWorkerPriorityTimeToSendHigh: {
    // 100 codes a minute, 99 of them sent between 1 and 2.5 s after publication: p99 ≈ 2.5 s > 1 s, for 5m.
    fires: {
      series: timeToSend('priority="high", pod="a"', { '0.25': '0+1x30', '1': '0+1x30', '2.5': '0+100x30', '+Inf': '0+100x30' }),
      at: '15m',
      fires: [{ namespace, severity: 'warning' }],
    },
    // Codes sent within 0.25 s; bulk (priority normal) slow: not the codes' alert.
    silent: {
      series: {
        ...timeToSend('priority="high", pod="a"', { '0.25': '0+100x30', '1': '0+100x30', '2.5': '0+100x30', '+Inf': '0+100x30' }),
        ...timeToSend('priority="normal", pod="a"', { '0.25': '0x30', '1': '0x30', '2.5': '0x30', '+Inf': '0+100x30' }),
      },
      at: '15m',
      fires: [],
    },
  },
};

let helm = '';
let promtool = '';
let dir = '';

beforeAll(() => {
  helm = ensureHelm(TOOL_BUILD_TIMEOUT_MS);
  promtool = ensureBuiltTool('promtool');
  dir = mkdtempSync(path.join(tmpdir(), 'sms-worker-alerts-'));
}, 2 * TOOL_BUILD_TIMEOUT_MS + 10_000);

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

function ruleGroups(...extra: string[]): RuleGroup[] {
  const result = run(helm, templateArgs(['--set', 'prometheusRule.enabled=true', ...extra, '--show-only', 'templates/prometheusrule.yaml']));
  if (result.status !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  const [rule] = parseManifests(result.stdout) as (K8sObject & { spec: { groups: RuleGroup[] } })[];
  if (rule === undefined) throw new Error('no PrometheusRule rendered');
  return rule.spec.groups;
}

function promtoolRun(args: readonly string[]): { status: number | null; output: string } {
  const result = spawnSync(promtool, args, { encoding: 'utf8', cwd: dir, timeout: 60_000 });
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

function writeRules(file: string, groups: RuleGroup[]): string {
  writeFileSync(path.join(dir, file), stringify({ groups }));
  return file;
}

function testGroup(name: string, alert: string, c: Case): unknown {
  return {
    name,
    interval: '1m',
    input_series: Object.entries(c.series).map(([series, values]) => ({ series, values })),
    alert_rule_test: [{ eval_time: c.at, alertname: alert, exp_alerts: c.fires.map((labels) => ({ exp_labels: labels })) }],
  };
}

describe('PrometheusRule checked and unit-tested with promtool', { timeout: 60_000 }, () => {
  it('promtool check rules accepts the rules rendered with the defaults, the receipts receiver on, and everything on', () => {
    for (const [file, groups] of [
      ['defaults.rules.yaml', ruleGroups()],
      ['receipts-on.rules.yaml', ruleGroups(...RECEIPTS_ON)],
      ['everything-on.rules.yaml', ruleGroups('-f', everythingOnValues)],
    ] as const) {
      const check = promtoolRun(['check', 'rules', writeRules(file, groups)]);
      expect(check.status, check.output).toBe(0);
      expect(check.output).toMatch(/SUCCESS: \d+ rules found/);
    }
  });

  it('has a firing and a silent case for every alert the chart renders (receipts receiver on)', () => {
    const alerts = ruleGroups(...RECEIPTS_ON)
      .flatMap((g) => g.rules)
      .flatMap((r) => (r.alert === undefined ? [] : [r.alert]));
    expect(alerts.sort()).toEqual(Object.keys(CASES).sort());
  });

  it('has a firing and a silent case for every alert the chart renders with the priority topic on', () => {
    const alerts = ruleGroups(...RECEIPTS_ON, ...PRIORITY_ON)
      .flatMap((g) => g.rules)
      .flatMap((r) => (r.alert === undefined ? [] : [r.alert]));
    expect(alerts.sort()).toEqual([...new Set([...Object.keys(CASES), ...Object.keys(PRIORITY_CASES)])].sort());
    expect(alerts).toContain('SmsWorkerPriorityTimeToSendHigh');
    expect(ruleGroups(...RECEIPTS_ON).flatMap((g) => g.rules.map((r) => r.alert))).not.toContain('SmsWorkerPriorityTimeToSendHigh');
  });

  it('the priority thresholds come from prometheusRule.priorityLagThreshold and priorityTimeToSendSeconds', () => {
    const rules = ruleGroups(...PRIORITY_ON, '--set', 'prometheusRule.priorityLagThreshold=50', '--set-json', 'prometheusRule.priorityTimeToSendSeconds=2.5').flatMap((g) => g.rules);
    const lag = rules.find((r) => r.alert === 'SmsWorkerConsumerLagGrowing')?.expr ?? '';
    expect(lag).toContain(`topic="${priorityTopic}"})) > 50)`);
    expect(lag).toContain(`topic="${topic}"})) > 1000)`);
    expect(rules.find((r) => r.alert === 'SmsWorkerPriorityTimeToSendHigh')?.expr.trim()).toMatch(/priority="high"\}\[5m\]\)\)\) > 2\.5$/);
  });

  it('renders the receipts alerts, in their own group, only with receipts.enabled', () => {
    const alertsOf = (groups: RuleGroup[]): string[] => groups.flatMap((g) => g.rules).flatMap((r) => (r.alert === undefined ? [] : [r.alert]));
    expect(alertsOf(ruleGroups()).filter((a) => a.startsWith('SmsReceipts'))).toEqual([]);
    const on = ruleGroups(...RECEIPTS_ON);
    expect(on.map((g) => g.name)).toEqual([`${job}.rules`, `${receiptsJob}.rules`]);
    expect(alertsOf(on.slice(1)).sort()).toEqual(['SmsReceiptsAbsent', 'SmsReceiptsPublishFailing', 'SmsReceiptsRejectingPosts']);
    const custom = ruleGroups(...RECEIPTS_ON, '--set', 'prometheusRule.receiptsMetricSelector=cluster="eu"', '--set', 'prometheusRule.receiptsRejectedPerSecond=2');
    const rejecting = custom.flatMap((g) => g.rules).find((r) => r.alert === 'SmsReceiptsRejectingPosts');
    expect(rejecting?.expr).toContain('sms_receipts_rejected_total{cluster="eu", reason=~');
    expect(rejecting?.expr.trim()).toMatch(/ > 2$/);
  });

  it('SmsWorkerRoutePaused: fires once the route has been paused longer than routePausedMinutes, not before, and stops when it resumes', () => {
    const series = `sms_worker_route_paused_since_timestamp_seconds{${release}, operation="text", region="AU", pod="a"}`;
    const route = { namespace, operation: 'text', region: 'AU', severity: 'warning' };
    const rulesFor = (file: string, ...extra: string[]): string =>
      writeRules(
        file,
        ruleGroups(...extra).map((g) => ({
          ...g,
          rules: g.rules.filter((r) => r.alert === 'SmsWorkerRoutePaused').map(({ annotations: _annotations, ...rule }) => rule),
        })),
      );
    /** Paused at minute 2 (since = 120 s), resumed at minute 40 (series removed). */
    const pausedFromMinute2 = { interval: '1m', input_series: [{ series, values: '_x2 120x37 stale' }] };
    const at = (minute: number, fires: boolean): unknown => ({ eval_time: `${minute}m`, alertname: 'SmsWorkerRoutePaused', exp_alerts: fires ? [{ exp_labels: route }] : [] });
    const cases: [string, string[], unknown[]][] = [
      // Default 15 minutes: 15 minutes paused at minute 17 is not more than 15; 16 at minute 18 is.
      ['route-paused-default', [], [at(2, false), at(17, false), at(18, true), at(39, true), at(41, false)]],
      // 5 minutes: fires from minute 8 (6 minutes paused).
      ['route-paused-5', ['--set', 'prometheusRule.routePausedMinutes=5'], [at(7, false), at(8, true), at(17, true), at(41, false)]],
    ];
    for (const [name, extra, tests] of cases) {
      const rules = rulesFor(`${name}.rules.yaml`, ...extra);
      writeFileSync(
        path.join(dir, `${name}.test.yaml`),
        stringify({ rule_files: [rules], evaluation_interval: '1m', tests: [{ name, ...pausedFromMinute2, alert_rule_test: tests }] }),
      );
      const test = promtoolRun(['test', 'rules', `${name}.test.yaml`]);
      expect(test.status, test.output).toBe(0);
    }
    const [rule] = ruleGroups('--set', 'prometheusRule.routePausedMinutes=5')
      .flatMap((g) => g.rules)
      .filter((r) => r.alert === 'SmsWorkerRoutePaused');
    expect(rule?.annotations?.description).toContain('{{ $labels.region }}');
    expect(rule?.annotations?.description).toContain('more than 5');
  });

  for (const [alert, cases] of Object.entries(PRIORITY_CASES)) {
    it(`${alert} with the priority topic on: fires and stays silent on the priority topic's series, and still on the command topic's`, () => {
      const groups = ruleGroups(...RECEIPTS_ON, ...PRIORITY_ON).map((g) => ({
        ...g,
        rules: g.rules.filter((r) => r.alert === alert).map(({ annotations: _annotations, ...rule }) => rule),
      }));
      const rules = writeRules(`priority-${alert}.rules.yaml`, groups);
      const testFile = `priority-${alert}.test.yaml`;
      const commandTopicCases = CASES[alert];
      writeFileSync(
        path.join(dir, testFile),
        stringify({
          rule_files: [rules],
          evaluation_interval: '1m',
          tests: [
            testGroup(`${alert} fires (priority on)`, alert, cases.fires),
            testGroup(`${alert} stays silent (priority on)`, alert, cases.silent),
            ...(commandTopicCases === undefined
              ? []
              : [
                  testGroup(`${alert} fires on the command topic (priority on)`, alert, commandTopicCases.fires),
                  testGroup(`${alert} stays silent on the command topic (priority on)`, alert, commandTopicCases.silent),
                ]),
          ],
        }),
      );
      const test = promtoolRun(['test', 'rules', testFile]);
      expect(test.status, test.output).toBe(0);
      expect(test.output).toContain('SUCCESS');
    });
  }

  for (const [alert, cases] of Object.entries(CASES)) {
    it(`${alert}: fires on series that should fire it, stays silent on series that should not`, () => {
      // Annotations are left out of the copy under test: promtool compares them verbatim after
      // expanding $value, which would pin each test to a float; `check rules` validates their templates.
      const groups = ruleGroups(...RECEIPTS_ON).map((g) => ({
        ...g,
        rules: g.rules.filter((r) => r.alert === alert).map(({ annotations: _annotations, ...rule }) => rule),
      }));
      const rules = writeRules(`${alert}.rules.yaml`, groups);
      const testFile = `${alert}.test.yaml`;
      writeFileSync(
        path.join(dir, testFile),
        stringify({
          rule_files: [rules],
          evaluation_interval: '1m',
          tests: [testGroup(`${alert} fires`, alert, cases.fires), testGroup(`${alert} stays silent`, alert, cases.silent)],
        }),
      );
      const test = promtoolRun(['test', 'rules', testFile]);
      expect(test.status, test.output).toBe(0);
      expect(test.output).toContain('SUCCESS');
    });
  }
});
