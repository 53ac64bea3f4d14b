import { createServer } from 'node:http';
import { describe, expect, inject, it } from 'vitest';
import { redrive, type RedriveOptions } from '../../src/cli/redrive.ts';
import { REDRIVEN_FROM_HEADER } from '../../src/cli/redrive-plan.ts';
import { kafkaRedriveIo } from '../../src/kafka/redrive-io.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import { decodeDeadLetter } from '../helpers/dead-letters.ts';
import { createTopics, eventually, testKafka, withAdmin } from '../helpers/kafka.ts';
import { startWorkerRig, textCommand } from '../helpers/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { closeServer, forward, urlOf } from '../helpers/registry-proxy.ts';

const sandbox = useSandbox();
const cleanups = useCleanups();

/**
 * The registry as the worker sees it through an outage of the kind that dead-letters: while
 * `forgetting`, every lookup of a schema by id answers 404 (a registry restored without the
 * producers' subjects, or pointed at the wrong instance); everything else goes through.
 */
async function startForgettingRegistry(upstreamUrl: string): Promise<{ url: string; forgetting: boolean; lookups404: number; close(): Promise<void> }> {
  const upstream = new URL(upstreamUrl);
  const state = { url: '', forgetting: true, lookups404: 0, close: async () => {} };
  const server = createServer((req, res) => {
    if (state.forgetting && /\/schemas\/ids\/\d+/.test(req.url ?? '')) {
      state.lookups404 += 1;
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error_code":40403,"message":"Schema not found"}');
      return;
    }
    forward(upstream, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = urlOf(server);
  state.close = () => closeServer(server);
  return state;
}

async function highWaterMark(topic: string): Promise<number> {
  return withAdmin(testKafka(), async (admin) => (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0));
}

describe('sms-worker redrive', () => {
  it('turns records dead-lettered during a registry outage into exactly one result each, and a second run sends nothing again', async () => {
    const registry = await startForgettingRegistry(inject('schemaRegistryUrl'));
    cleanups.add(() => registry.close());
    const { publish, raw, results, topics } = await startWorkerRig(sandbox.url, cleanups, { SCHEMA_REGISTRY_URL: registry.url });

    // During the outage: three commands, and one record whose schema id no registry has.
    const commands = [textCommand(), textCommand(), textCommand()];
    const ids = commands.map((c) => c.commandId);
    await publish(commands.map((command) => ({ command })));
    const neverRegistered = Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0x00]), Buffer.from('xyz')]);
    await raw.publishRaw([{ key: 'no-such-schema', value: neverRegistered, headers: { origin: 'test' } }]);
    const letters = await decodeDeadLetter(topics.deadLetter, 4);
    expect(letters.map((l) => l.error.code)).toEqual(['UNKNOWN_SCHEMA_ID', 'UNKNOWN_SCHEMA_ID', 'UNKNOWN_SCHEMA_ID', 'UNKNOWN_SCHEMA_ID']);
    // One lookup at least per schema id (the command schema's and the one no registry has).
    expect(registry.lookups404).toBeGreaterThanOrEqual(2);
    for (const id of ids) expect(sandbox.state.requests({ correlationId: id })).toHaveLength(0);

    // The registry is back.
    registry.forgetting = false;
    const lines: string[] = [];
    const options = (execute: boolean): RedriveOptions => ({
      execute,
      dlqTopic: topics.deadLetter,
      toTopic: undefined,
      filter: {},
      max: 100,
      say: (line) => lines.push(line),
    });
    const registryUrl = inject('schemaRegistryUrl');

    // A dry run publishes nothing and says what it would do.
    const before = await highWaterMark(topics.commands);
    const dry = await redrive(kafkaRedriveIo(testKafka()), createRegistry(registryUrl), options(false));
    expect(dry).toMatchObject({ read: 4, selected: 4, wouldPublish: 3, published: 0, stillUndecodable: { UNKNOWN_SCHEMA_ID: 1 } });
    expect(lines.filter((l) => l.includes('would publish'))).toHaveLength(3);
    expect(lines.some((l) => l.includes('still does not decode (UNKNOWN_SCHEMA_ID'))).toBe(true);
    expect(await highWaterMark(topics.commands)).toBe(before);
    const bounded = await redrive(kafkaRedriveIo(testKafka()), createRegistry(registryUrl), { ...options(false), max: 2 });
    expect(bounded).toMatchObject({ wouldPublish: 2, overMax: 1 });

    // Executed: each command is sent once and answered once.
    const first = await redrive(kafkaRedriveIo(testKafka()), createRegistry(registryUrl), options(true));
    expect(first).toMatchObject({ published: 3, stillUndecodable: { UNKNOWN_SCHEMA_ID: 1 } });
    const got = await results.waitFor(ids);
    for (const id of ids) {
      expect(got.get(id)?.outcome).toBe('SENT');
      expect(sandbox.state.requests({ correlationId: id })).toHaveLength(1);
    }
    expect(await highWaterMark(topics.commands)).toBe(before + 3);

    // Run again: the records go back, and the worker's repeat window skips them.
    const second = await redrive(kafkaRedriveIo(testKafka()), createRegistry(registryUrl), options(true));
    expect(second.published).toBe(3);
    const marker = textCommand();
    await publish([{ command: marker }]);
    await results.waitFor([marker.commandId]);
    await eventually(async () => ((await highWaterMark(topics.commands)) === before + 7 ? true : undefined), 10_000, 'the second run and the marker published');
    for (const id of ids) {
      expect(results.byCommand.get(id)).toHaveLength(1);
      expect(sandbox.state.requests({ correlationId: id })).toHaveLength(1);
    }
  });

  it('keeps key, value and headers byte for byte and names the dead letter it came from', async () => {
    const registry = await startForgettingRegistry(inject('schemaRegistryUrl'));
    cleanups.add(() => registry.close());
    const { publish, topics } = await startWorkerRig(sandbox.url, cleanups, { SCHEMA_REGISTRY_URL: registry.url });
    const command = textCommand();
    await publish([{ command, key: 'the-key' }]);
    const [letter] = await decodeDeadLetter(topics.deadLetter, 1);
    const replayTopic = `${topics.commands}-replay`;
    await createTopics(testKafka(), [{ topic: replayTopic }]);
    const summary = await redrive(kafkaRedriveIo(testKafka()), createRegistry(inject('schemaRegistryUrl')), {
      execute: true,
      dlqTopic: topics.deadLetter,
      toTopic: replayTopic,
      filter: { codes: new Set(['UNKNOWN_SCHEMA_ID']), sourceTopic: topics.commands },
      max: 10,
      say: () => {},
    });
    expect(summary.published).toBe(1);

    const consumer = testKafka().consumer({ groupId: `${topics.group}-replay` });
    cleanups.add(() => consumer.disconnect());
    await consumer.connect();
    await consumer.subscribe({ topic: replayTopic, fromBeginning: true });
    const seen: { key: Buffer | null; value: Buffer | null; headers: Record<string, unknown> }[] = [];
    await consumer.run({ eachMessage: async ({ message }) => void seen.push({ key: message.key, value: message.value, headers: message.headers ?? {} }) });
    await eventually(() => (seen.length === 1 ? true : undefined), 30_000, 'the replayed record');
    expect(seen[0]?.key).toEqual(Buffer.from('the-key'));
    expect(seen[0]?.value?.equals(letter?.value ?? Buffer.alloc(0))).toBe(true);
    expect(String(seen[0]?.headers[REDRIVEN_FROM_HEADER])).toMatch(new RegExp(`^${topics.deadLetter.replaceAll('.', '\\.')}/\\d+/0$`));
    for (const { key, value } of letter?.headers ?? []) expect(Buffer.from(seen[0]?.headers[key] as Buffer).equals(value ?? Buffer.alloc(0))).toBe(true);
  });
});
