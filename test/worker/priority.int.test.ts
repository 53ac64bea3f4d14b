// Codes before campaigns (docs/priority.md): a second command topic at high priority, in its own
// consumer group, shares the process's in-flight slots, mark permits and rate-limit tokens with
// the bulk topic and is served first, while the bulk topic keeps PRIORITY_NORMAL_MIN_SHARE.
// Real broker, registry and HTTP; the sandbox's request log says when each command reached it.
import { afterEach, describe, expect, it } from 'vitest';
import type { SendCommand } from '../../src/contracts/command.ts';
import { eventually, testKafka } from '../helpers/kafka.ts';
import { publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, voiceCommand, workerEnv, within } from '../helpers/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';

const sandbox = useSandbox();
afterEach(() => sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'none' } }));
const cleanups = useCleanups();

/** A worker consuming a bulk topic and a code topic, with a publisher for each and the shared result topic. */
async function priorityRig(overrides: Record<string, string>) {
  const topics = testTopics();
  const codesTopic = `${topics.commands}.codes`;
  const env = workerEnv(topics, sandbox.url, { PRIORITY_COMMAND_TOPIC: codesTopic, ...overrides });
  const start = async () => {
    const { worker } = await startTestWorker(env);
    cleanups.add(() => worker.stop());
    return worker;
  };
  const worker = await start();
  const bulk = await publisherFor(testKafka(), topics.commands);
  cleanups.add(() => bulk.disconnect());
  const codes = await publisherFor(testKafka(), codesTopic);
  cleanups.add(() => codes.disconnect());
  const results = await ResultCollector.start(topics.results);
  cleanups.add(() => results.stop());
  const publish = (publisher: typeof bulk, commands: SendCommand[]) =>
    within(45_000, 'publishing commands', publisher.publish(commands.map((command) => ({ command }))));
  return {
    worker,
    start,
    topics,
    codesTopic,
    results,
    publishBulk: (c: SendCommand[]) => publish(bulk, c),
    publishCodes: (c: SendCommand[]) => publish(codes, c),
  };
}

/** When each command's first request reached the service (epoch ms). */
function firstRequestAt(commandIds: readonly string[]): Map<string, number> {
  const at = new Map<string, number>();
  for (const id of commandIds) {
    const first = sandbox.state.requests({ correlationId: id })[0];
    if (first !== undefined) at.set(id, first.receivedAt);
  }
  return at;
}

const bulkCommands = (n: number): SendCommand[] => Array.from({ length: n }, (_, i) => textCommand({ content: `Campaign message ${i}` }));
const codeCommands = (n: number): SendCommand[] => Array.from({ length: n }, (_, i) => voiceCommand('+8618509872103', String(1000 + (i % 9000))));

describe('priority topic: codes before campaigns', () => {
  it('codes published behind a bulk backlog are sent before it drains, and every command of both topics gets exactly one result across a restart', async () => {
    // 10 calls a second: the 150-command backlog takes 15 s. Slots and marks deep enough that,
    // served in arrival order, the codes would wait behind dozens of bulk commands (a count that
    // does not depend on the rate), while what goes out between the codes' publish and their
    // fetch (a round trip or two, longer on a loaded machine) is at most a few at this rate.
    const rig = await priorityRig({ RATE_LIMIT_PER_SECOND: '10', MAX_IN_FLIGHT: '16' });
    sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'fixed', ms: 20 } });
    const bulk = bulkCommands(150);
    await rig.publishBulk(bulk);
    const bulkIds = bulk.map((c) => c.commandId);
    // The backlog is being worked on: slots, marks and the token queue are full of bulk commands.
    await eventually(() => (firstRequestAt(bulkIds).size >= 20 ? true : undefined), 30_000, 'the bulk backlog sending');
    const codes = codeCommands(10);
    await rig.publishCodes(codes);
    // From the moment the codes are in Kafka: the publish's own round trips (a fresh producer's
    // metadata, a loaded CI machine) are no wait of the worker's, and bulk goes at the full rate
    // until the codes are there to compete.
    const codesPublishedAt = Date.now();
    const codeIds = codes.map((c) => c.commandId);
    const got = await rig.results.waitFor(codeIds, 30_000);
    for (const id of codeIds) {
      expect(got.get(id)?.outcome).toBe('SENT');
      expect(got.get(id)?.source.topic).toBe(rig.codesTopic);
    }
    const codesAt = [...firstRequestAt(codeIds).values()];
    const lastCodeAt = Math.max(...codesAt);
    const bulkAt = firstRequestAt(bulkIds);
    // Bulk commands that reached the service while the codes were on their way: the normal share
    // (0.1 of the contended tokens) and the few already holding a token. In arrival order it
    // would be every bulk command marked or holding a slot before them (16 slots + 32 marks).
    const bulkMeanwhile = [...bulkAt.values()].filter((t) => t > codesPublishedAt && t <= lastCodeAt).length;
    expect(bulkMeanwhile).toBeLessThanOrEqual(10);
    // The backlog had not drained when the last code went out.
    expect([...bulkAt.values()].filter((t) => t <= lastCodeAt).length).toBeLessThan(100);

    // A graceful stop mid-backlog and a new worker: both topics' claims (one ledger partition n
    // shared by partition n of each topic, told apart by key) resume where they committed.
    await within(45_000, 'stopping the worker', rig.worker.stop());
    const more = codeCommands(5);
    await rig.publishCodes(more);
    await rig.start();
    const all = [...bulkIds, ...codeIds, ...more.map((c) => c.commandId)];
    await rig.results.waitFor(all, 60_000);
    for (const id of all) {
      expect(rig.results.byCommand.get(id), id).toHaveLength(1);
      expect(rig.results.byCommand.get(id)?.[0]?.outcome, id).toBe('SENT');
      expect(sandbox.state.requests({ correlationId: id }), id).toHaveLength(1);
    }
  }, 120_000);

  it('the bulk topic still progresses while codes take every token they can: at least its minimum share', async () => {
    const rig = await priorityRig({ RATE_LIMIT_PER_SECOND: '40', MAX_IN_FLIGHT: '16', PRIORITY_NORMAL_MIN_SHARE: '0.2' });
    sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'fixed', ms: 20 } });
    const bulk = bulkCommands(120);
    const codes = codeCommands(200);
    await rig.publishCodes(codes);
    await rig.publishBulk(bulk);
    const codeIds = codes.map((c) => c.commandId);
    await rig.results.waitFor(codeIds, 60_000);
    const codesAt = [...firstRequestAt(codeIds).values()].sort((a, b) => a - b);
    // While the codes queue (first to last code request), the bulk commands that reached the
    // service: 0.2 of the contended tokens would be 50 for 200 codes; allow for the start, when
    // the bulk fetch had not queued yet.
    const [firstCode, lastCode] = [codesAt[0] ?? 0, codesAt[codesAt.length - 1] ?? 0];
    const bulkDuring = [...firstRequestAt(bulk.map((c) => c.commandId)).values()].filter((t) => t >= firstCode && t <= lastCode).length;
    expect(bulkDuring).toBeGreaterThanOrEqual(25);
    // ...and never more than its share plus what slipped in before the codes queued.
    expect(bulkDuring).toBeLessThan(100);
    await rig.results.waitFor(
      bulk.map((c) => c.commandId),
      60_000,
    );
  }, 120_000);
});
