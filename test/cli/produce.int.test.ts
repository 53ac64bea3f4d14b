import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTopics, testBrokers, testKafka, uniqueName } from '../helpers/kafka.ts';
import { startRegistryAuthProxy, type RegistryAuthProxy } from '../helpers/registry-proxy.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
let proxy: RegistryAuthProxy;

beforeAll(async () => {
  proxy = await startRegistryAuthProxy(inject('schemaRegistryUrl'));
});

afterAll(async () => {
  await proxy.close();
});

/** The proxy's requests since `from` (an index into its log). */
const seenSince = (from: number): readonly { path: string; authorized: boolean }[] => proxy.seen.slice(from);

function produce(env: Record<string, string>, line: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, 'produce', line], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('sms-worker produce against a registry that requires credentials', () => {
  const line = JSON.stringify({ voice: { to: '18509872103', code: '123456' } });

  it('authenticates with SCHEMA_REGISTRY_USERNAME/PASSWORD, as the worker does, and publishes', async () => {
    const topic = uniqueName('cli-auth');
    await createTopics(testKafka(), [{ topic }]);
    const from = proxy.seen.length;
    const result = await produce(
      {
        KAFKA_BROKERS: testBrokers().join(','),
        SCHEMA_REGISTRY_URL: proxy.url,
        SCHEMA_REGISTRY_USERNAME: proxy.username,
        SCHEMA_REGISTRY_PASSWORD: proxy.password,
        COMMAND_TOPIC: topic,
      },
      line,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ topic });
    expect(seenSince(from).length).toBeGreaterThan(0);
    expect(seenSince(from).every((r) => r.authorized)).toBe(true);
    expect(result.stdout + result.stderr).not.toContain(proxy.password);
  }, 60_000);

  it('without the credentials the registry refuses it, so nothing is published', async () => {
    const topic = uniqueName('cli-noauth');
    await createTopics(testKafka(), [{ topic }]);
    const from = proxy.seen.length;
    const result = await produce({ KAFKA_BROKERS: testBrokers().join(','), SCHEMA_REGISTRY_URL: proxy.url, COMMAND_TOPIC: topic }, line);
    expect(result.code).not.toBe(0);
    expect(seenSince(from).some((r) => !r.authorized)).toBe(true);
  }, 60_000);
});
