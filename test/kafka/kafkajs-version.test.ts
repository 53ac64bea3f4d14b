import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { assertKafkajsVersion, KAFKAJS_PATCHES, KAFKAJS_VERSION } from '../../src/kafka/kafkajs-version.ts';

const dir = mkdtempSync(join(tmpdir(), 'sms-worker-kafkajs-version-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the kafkajs release the patches were written for', () => {
  it('is the one package.json pins exactly', async () => {
    const manifest = (await import('../../package.json', { with: { type: 'json' } })).default as { dependencies: Record<string, string> };
    expect(manifest.dependencies['kafkajs']).toBe(KAFKAJS_VERSION);
  });

  it('is accepted; any other is refused with a message naming the release and every patch', () => {
    expect(() => assertKafkajsVersion(KAFKAJS_VERSION)).not.toThrow();
    for (const other of ['2.2.3', '2.3.0', undefined]) {
      expect(() => assertKafkajsVersion(other)).toThrow(/refuses to run on another release/);
    }
    let message = '';
    try {
      assertKafkajsVersion('2.3.0');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('kafkajs 2.3.0 is installed');
    for (const patch of KAFKAJS_PATCHES) expect(message).toContain(patch);
    expect(message).toContain('docs/kafka-client.md');
  });

  it('`sms-worker run` on another kafkajs release exits 1 before any patch, with that message', () => {
    // A resolver hook hands the worker a kafkajs package.json of another release (the rest of kafkajs stays).
    const fake = join(dir, 'package.json');
    writeFileSync(fake, JSON.stringify({ name: 'kafkajs', version: '2.2.3' }));
    const hook = join(dir, 'hook.mjs');
    writeFileSync(
      hook,
      `import { registerHooks } from 'node:module';
registerHooks({
  resolve(specifier, context, next) {
    if (specifier === 'kafkajs/package.json') return { url: ${JSON.stringify(pathToFileURL(fake).href)}, format: 'json', shortCircuit: true };
    return next(specifier, context);
  },
});
`,
    );
    const run = spawnSync(process.execPath, ['--import', pathToFileURL(hook).href, 'src/cli/main.ts', 'run'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: {
        PATH: process.env['PATH'] ?? '',
        KAFKA_BROKERS: '127.0.0.1:1',
        SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1',
        PROVIDER_BASE_URL: 'http://127.0.0.1:1',
        PROVIDER_ACCESS_KEY_ID: 'test',
        HTTP_PORT: '0',
      },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('kafkajs 2.2.3 is installed, but sms-worker patches kafkajs 2.2.4');
    expect(run.stderr).toContain('docs/kafka-client.md');
  });
});
