import { describe, it } from 'vitest';
import { useSandbox } from '../helpers/fixtures.ts';
import type { Worker } from '../../src/worker/worker.ts';
import { eventually } from '../helpers/kafka.ts';
import { startTestWorker, testTopics, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();

/** The process's share of the deployment-wide limit, as its /metrics would show it. */
async function share(worker: Worker): Promise<number | undefined> {
  const metric = await worker.metrics.rateLimitShare.get();
  return metric.values[0]?.value;
}

describe('deployment-wide rate limit', () => {
  it('each process of the group takes its partitions’ share of RATE_LIMIT_PER_SECOND, re-computed when a process joins and leaves', async () => {
    const topics = testTopics();
    const env = workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '12', RATE_LIMIT_PER_SECOND: '120', KAFKA_SESSION_TIMEOUT_MS: '6000' });
    const first = (await startTestWorker(env)).worker;
    let second: Worker | undefined;
    try {
      // Alone in the group: all 12 partitions, the whole limit.
      await eventually(async () => ((await share(first)) === 120 ? true : undefined), 60_000, 'the first process to take the whole limit');
      second = (await startTestWorker(env)).worker;
      const joined = second;
      // Two processes: the shares follow the assignment and add up to the limit.
      await eventually(
        async () => {
          const [a, b] = [await share(first), await share(joined)];
          return a !== undefined && b !== undefined && a < 120 && a + b === 120 ? [a, b] : undefined;
        },
        60_000,
        'the shares of two processes to add up to the limit',
      );
      await second.stop();
      second = undefined;
      await eventually(async () => ((await share(first)) === 120 ? true : undefined), 60_000, 'the remaining process to take the whole limit again');
    } finally {
      await second?.stop();
      await first.stop();
    }
  });
});
