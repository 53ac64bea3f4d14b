import { spawn } from 'node:child_process';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTopics, testBrokers, testKafka, uniqueName } from '../helpers/kafka.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
const USER = 'cli-user';
const PASSWORD = 'cli-registry-secret';

/**
 * The stack's registry has no authentication; this loopback proxy in front of it demands HTTP
 * basic auth, as a production registry does, and records what each request carried.
 */
let proxy: Server;
let proxyUrl: string;
const seen: { path: string; authorized: boolean }[] = [];

function authorized(headers: IncomingHttpHeaders): boolean {
  return headers.authorization === `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
}

beforeAll(async () => {
  const upstream = new URL(inject('schemaRegistryUrl'));
  proxy = createServer((req, res) => {
    const ok = authorized(req.headers);
    seen.push({ path: req.url ?? '', authorized: ok });
    if (!ok) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error_code":401,"message":"Unauthorized"}');
      return;
    }
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: `${upstream.pathname.replace(/\/$/, '')}${req.url ?? ''}`,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
});

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
    seen.length = 0;
    const result = await produce(
      {
        KAFKA_BROKERS: testBrokers().join(','),
        SCHEMA_REGISTRY_URL: proxyUrl,
        SCHEMA_REGISTRY_USERNAME: USER,
        SCHEMA_REGISTRY_PASSWORD: PASSWORD,
        COMMAND_TOPIC: topic,
      },
      line,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ topic });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => r.authorized)).toBe(true);
    expect(result.stdout + result.stderr).not.toContain(PASSWORD);
  }, 60_000);

  it('without the credentials the registry refuses it, so nothing is published', async () => {
    const topic = uniqueName('cli-noauth');
    await createTopics(testKafka(), [{ topic }]);
    seen.length = 0;
    const result = await produce({ KAFKA_BROKERS: testBrokers().join(','), SCHEMA_REGISTRY_URL: proxyUrl, COMMAND_TOPIC: topic }, line);
    expect(result.code).not.toBe(0);
    expect(seen.some((r) => !r.authorized)).toBe(true);
  }, 60_000);
});
