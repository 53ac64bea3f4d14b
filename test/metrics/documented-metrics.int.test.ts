import { afterEach, describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { checkpointKey, encodeCheckpoint } from '../../src/worker/lane/ledger-checkpoint.ts';
import { eventually, testKafka } from '../helpers/kafka.ts';
import { documentedMetrics } from '../helpers/doc-metrics.ts';
import { createWorkerTopics, publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, workerEnv } from '../helpers/worker.ts';

// Slow enough that sends are seen under way and a backlog is seen as lag.
const sandbox = useSandbox({ faults: { latency: { kind: 'fixed', ms: 300 } } });
afterEach(() => sandbox.state.setBalance('1000.000000'));
const cleanups = useCleanups();

/** Samples of a Prometheus text exposition: `name{labels} value` → name → values. */
function samples(text: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? (\S+)/.exec(line);
    if (match === null) continue;
    const list = out.get(match[1] ?? '') ?? [];
    list.push(Number(match[2]));
    out.set(match[1] ?? '', list);
  }
  return out;
}

describe('metrics docs/metrics.md lists', () => {
  it('are each registered with their type and move in a run that exercises every path', async () => {
    const topics = testTopics();
    await createWorkerTopics(topics, 1);
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());

    // Offset 0: marked by an "earlier owner" without a result (in doubt). Offset 1: not Avro
    // (dead letter). Offsets 2 and 3: the same commandId twice (a duplicate). Then a backlog.
    const inDoubt = textCommand();
    const repeated = textCommand();
    const backlog = Array.from({ length: 8 }, () => textCommand());
    await publisher.publishRaw([{ key: inDoubt.commandId, value: await publisher.encode(inDoubt) }]);
    await publisher.publishRaw([{ key: 'poison', value: Buffer.from('{"not":"avro"}') }]);
    await publisher.publish([{ command: repeated }, { command: repeated }, ...backlog.map((command) => ({ command }))]);
    const producer = testKafka().producer();
    await producer.connect();
    await producer.send({
      topic: topics.ledger,
      messages: [
        {
          key: checkpointKey(topics.group, topics.commands),
          partition: 0,
          value: encodeCheckpoint({ next: 0n, open: [{ offset: 0n, commandId: inDoubt.commandId, at: Date.now() }] }),
        },
      ],
    });
    await producer.disconnect();
    // The first send is answered 503 (Retry-After 1 s): one retry.
    sandbox.state.faults.enqueue('http503');
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    // A rate limit far above what the run sends, so its share gauge is set. Velocity limits in
    // monitor mode, one recipient per prefix per minute: the backlog to +86 138 counts velocity
    // rejections and a block, and is sent anyway. A spend cap far above the run, so its gauges move.
    const { worker } = await startTestWorker(
      workerEnv(topics, sandbox.url, {
        MAX_IN_FLIGHT: '2',
        RATE_LIMIT_PER_SECOND: '10000',
        GEO_MODE: 'monitor',
        GEO_TEXT_DENIED_REGIONS: 'AU',
        VELOCITY_MODE: 'monitor',
        VELOCITY_PREFIX_PER_MINUTE: '1',
        SPEND_CAP_PER_DAY: '100000',
        // A second account: another key of the same service. What default refuses below for its
        // route (101301) or its funds (105400) goes on to it (sms_worker_failovers_total).
        ACCOUNTS: 'backup',
        ACCOUNT_BACKUP_ACCESS_KEY_ID: 'backup-key',
        // A tenant whose cap covers one text (0.045) and not two: its second waits (a cap pause).
        TENANT_LIMITS: JSON.stringify({ capped: { spendCapPerHour: '0.05' } }),
      }),
    );
    cleanups.add(() => worker.stop());
    const url = `http://127.0.0.1:${worker.httpPort}/metrics`;
    // Scraped over HTTP, as Prometheus does, all along the run: gauges move and come back.
    const peak = new Map<string, number>();
    let exposition = '';
    const scrape = async (): Promise<void> => {
      exposition = await (await fetch(url)).text();
      for (const [name, values] of samples(exposition)) peak.set(name, Math.max(peak.get(name) ?? 0, ...values));
    };
    let scraping = true;
    const scraper = (async () => {
      while (scraping) {
        await scrape().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    cleanups.add(async () => {
      scraping = false;
      await scraper;
    });

    await results.waitFor([inDoubt, repeated, ...backlog].map((c) => c.commandId));
    // A text to AU, where the service has no upstream (101301): its route is paused (and stays
    // paused: nothing to AU goes through in this run). A text to three recipients (3 billed units)
    // with a balance that covers two: the service refuses it (105400) while one-unit sends would
    // fit, so the worker holds commands at and above a cost ceiling instead of pausing the account.
    // (GEO_MODE=monitor with AU denied: the AU command below also counts a geo rejection, and is still sent.)
    sandbox.state.setBalance('0.100000');
    const noRoute = textCommand({ to: ['+61412345678'] });
    const costly = textCommand({ to: ['+8613800138000', '+8613900139000', '+8613700137000'] });
    await publisher.publish([{ command: noRoute }, { command: costly }]);
    await eventually(
      () => ((peak.get('sms_worker_paused_routes') ?? 0) > 0 && (peak.get('sms_worker_funds_cost_ceiling') ?? 0) > 0 ? true : undefined),
      30_000,
      'a paused route and the funds cost ceiling seen in /metrics',
    );
    // An empty account pauses sending until funds return.
    sandbox.state.setBalance('0.000000');
    const broke = textCommand();
    await publisher.publish([{ command: broke }]);
    await eventually(() => ((peak.get('sms_worker_paused') ?? 0) > 0 ? true : undefined), 30_000, 'the funds pause seen in /metrics');
    sandbox.state.setBalance('1000.000000');
    // The costly command ends too (sent once funds are back, or FAILED 105400); the one to AU is
    // still held when the worker stops (abandoned unsent), its route still paused.
    await results.waitFor([broke.commandId, costly.commandId]);
    await eventually(() => ((peak.get('sms_worker_duplicate_commands_total') ?? 0) > 0 ? true : undefined), 10_000, 'the duplicate counted');
    // A second member joins: the single partition stays with the first worker, whose claim is kept.
    const { worker: second } = await startTestWorker(workerEnv(topics, sandbox.url));
    cleanups.add(() => second.stop());
    await eventually(() => ((peak.get('sms_worker_partition_claims_kept_total') ?? 0) > 0 ? true : undefined), 30_000, 'the claim kept across the rebalance');
    // A fence from outside the group (a former member's, landing late): the first worker's
    // partition is lost until its heartbeats confirm it still owns it.
    const zombie = testKafka().producer({ transactionalId: `${topics.transactionalIdPrefix}-${topics.commands}-0`, idempotent: true, maxInFlightRequests: 1 });
    await zombie.connect();
    cleanups.add(() => zombie.disconnect());
    await (await zombie.transaction()).abort();
    const afterFence = textCommand();
    await publisher.publish([{ command: afterFence }]);
    await eventually(() => ((peak.get('sms_worker_lost_partitions') ?? 0) > 0 ? true : undefined), 30_000, 'the lost partition seen in /metrics');
    await results.waitFor([afterFence.commandId]);
    // Last (it waits until the worker stops, holding the partition's later results): a tenant at its cap.
    const cappedFirst = textCommand({ metadata: { tenant: 'capped' } });
    await publisher.publish([{ command: cappedFirst }, { command: textCommand({ metadata: { tenant: 'capped' } }) }]);
    await results.waitFor([cappedFirst.commandId]);
    await eventually(() => ((peak.get('sms_worker_tenant_cap_pauses_total') ?? 0) > 0 ? true : undefined), 30_000, 'the tenant cap pause seen in /metrics');
    await scrape();

    const problems: string[] = [];
    for (const metric of documentedMetrics()) {
      // Moves only on a bug (a partition machine's invariant broken), never in a correct run: its
      // type is checked here, its count in test/worker/lane/partition-lane.test.ts.
      const movesOnlyOnABug = metric.name === 'sms_worker_protocol_violations_total';
      const type = new RegExp(`^# TYPE ${metric.name} (\\w+)$`, 'm').exec(exposition)?.[1];
      if (type !== metric.type) problems.push(`${metric.name}: exported as ${type ?? 'nothing'}, docs/metrics.md says ${metric.type}`);
      // A counter or gauge moved if some sample was above 0 at some scrape; a histogram, if it counted an observation.
      const moved = peak.get(metric.type === 'histogram' ? `${metric.name}_count` : metric.name) ?? 0;
      if (!(moved > 0) && !movesOnlyOnABug) problems.push(`${metric.name}: never above 0 during the run`);
    }
    expect(problems).toEqual([]);
    expect(results.byCommand.get(inDoubt.commandId)?.[0]?.outcome).toBe('UNKNOWN');
  });
});
