import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { useSandbox } from '../helpers/fixtures.ts';
import { Worker } from '../../src/worker/worker.ts';
import { testKafka, withAdmin } from '../helpers/kafka.ts';
import { testTopics, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();

describe('worker lifecycle', () => {
  it('a stop() during start() wins: start gives up, everything is released, the worker never joins the group', async () => {
    const topics = testTopics();
    const config = loadConfig(workerEnv(topics, sandbox.url));
    const worker = new Worker({ config, logger: createLogger('silent') });
    const starting = worker.start();
    const stopping = worker.stop();
    await expect(starting).rejects.toThrow(/stopped while starting/);
    await stopping;
    await expect(worker.done).resolves.toBeUndefined();
    expect(worker.health().ready().ok).toBe(false);
    // Had start() carried on, its consumer would join the group after the stop.
    await new Promise((r) => setTimeout(r, 3_000));
    const members = await withAdmin(testKafka(), async (admin) => (await admin.describeGroups([topics.group])).groups[0]?.members.length ?? 0);
    expect(members).toBe(0);
  });

  it('is disposable with `await using`', async () => {
    const topics = testTopics();
    const config = loadConfig(workerEnv(topics, sandbox.url));
    let disposed: Worker;
    {
      await using worker = new Worker({ config, logger: createLogger('silent') });
      disposed = worker;
      await worker.start();
    }
    await expect(disposed.done).resolves.toBeUndefined();
    expect(disposed.health().ready().detail).toMatch(/stopped/);
  });
});
