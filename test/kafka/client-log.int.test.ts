import { describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually, testKafka } from '../helpers/kafka.ts';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { publisherFor, ResultCollector, testTopics, textCommand, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox({ faults: { latency: { kind: 'fixed', ms: 20 } } });
const cleanups = useCleanups();

/** Log lines (pino JSON) at error level or above. */
function errorLines(output: string): string[] {
  return output.split('\n').filter((line) => /"level":(50|60)/.test(line));
}

describe('worker processes through routine rebalances', () => {
  it('write nothing to stderr (no runtime warnings) and log no error while a second worker joins the group and leaves it', async () => {
    const topics = testTopics();
    await createTopics(testKafka(), [{ topic: topics.commands, partitions: 4 }, { topic: topics.results }, { topic: topics.deadLetter }]);
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const env = workerEnv(topics, sandbox.url);

    const first = new WorkerProcess(env);
    cleanups.add(async () => first.signal('SIGKILL'));
    const wave = async (n: number): Promise<void> => {
      const commands = Array.from({ length: n }, () => textCommand());
      await publisher.publish(commands.map((command) => ({ command })));
      await results.waitFor(commands.map((c) => c.commandId));
    };
    await wave(20);
    // A second member joins (a rebalance), both work, then it leaves (another rebalance).
    const second = new WorkerProcess(env);
    cleanups.add(async () => second.signal('SIGKILL'));
    await eventually(() => (/joined consumer group/.test(second.output) ? true : undefined), 60_000, 'the second worker joining');
    await eventually(() => ((first.output.match(/joined consumer group/g) ?? []).length >= 2 ? true : undefined), 60_000, 'the first worker re-joining');
    await wave(20);
    second.signal('SIGTERM');
    expect((await second.stopped(30_000)).code).toBe(0);
    await eventually(() => ((first.output.match(/joined consumer group/g) ?? []).length >= 3 ? true : undefined), 60_000, 'the first worker re-joining alone');
    await wave(20);
    first.signal('SIGTERM');
    expect((await first.stopped(30_000)).code).toBe(0);

    for (const worker of [first, second]) {
      expect(worker.stderr).toBe('');
      expect(errorLines(worker.output).map((l) => l.slice(0, 600))).toEqual([]);
    }
  });
});
