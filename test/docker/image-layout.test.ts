import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * No Docker engine here, so check what the image runs the way the image lays it out: the
 * compiled dist/, schemas/ and package.json side by side (the Dockerfile's COPY lines), started
 * with `node dist/cli/main.js` from that directory.
 */
const root = resolve(import.meta.dirname, '..', '..');
let app: string;

function entry(args: readonly string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['dist/cli/main.js', ...args], { cwd: app, encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', ...env }, timeout: 30_000 });
}

beforeAll(() => {
  app = mkdtempSync(join(tmpdir(), 'sms-worker-image-'));
  const build = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', join(app, 'dist')], { encoding: 'utf8' });
  expect(build.status, build.stdout + build.stderr).toBe(0);
  cpSync(join(root, 'schemas'), join(app, 'schemas'), { recursive: true });
  cpSync(join(root, 'package.json'), join(app, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(app, 'node_modules'), 'dir');
}, 120_000);

afterAll(() => {
  rmSync(app, { recursive: true, force: true });
});

describe('the image entry point, laid out as the image has it', () => {
  it('prints the help and exits 0', () => {
    const result = entry(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/run\s+the worker \(default\)/);
  });

  it('runs the worker by default and fails fast, listing every missing setting, with exit 2', () => {
    const result = entry(['run']);
    expect(result.status).toBe(2);
    for (const variable of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'PROVIDER_BASE_URL', 'PROVIDER_ACCESS_KEY_ID']) expect(result.stderr).toContain(variable);
  });

  it('finds the Avro schemas from the compiled code (the sandbox subcommand also starts)', () => {
    const schemas = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('./dist/contracts/avro.js'); console.log(m.commandType.name, m.resultType.name, m.deadLetterType.name)"], { cwd: app, encoding: 'utf8' });
    expect(schemas.status, schemas.stderr).toBe(0);
    expect(schemas.stdout.trim()).toBe('io.smsworker.v1.SendCommand io.smsworker.v1.CommandResult io.smsworker.v1.DeadLetter');
    expect(entry(['sandbox', '--help']).status).toBe(0);
  });
});
