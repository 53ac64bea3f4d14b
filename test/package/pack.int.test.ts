import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { testKafka } from '../helpers/kafka.ts';
import { createWorkerTopics, publisherFor, ResultCollector, testTopics, textCommand, workerEnv } from '../helpers/worker.ts';

/**
 * The package as a user gets it: `npm pack` (whose `prepack` builds dist/ with declarations) in a
 * copy of the sources, the tarball installed into an empty directory with the versions the
 * lockfile pins, and then `npx sms-worker` there, a TypeScript consumer of its types, and the
 * worker against the test stack for one command.
 */
const root = resolve(import.meta.dirname, '..', '..');
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; dev?: boolean; devOptional?: boolean }>;
};
/** Node 24 first, for npm, npx and the `#!/usr/bin/env node` of the bin. */
const PATH = [dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter);
let work: string;
let app: string;

function sh(command: string, args: readonly string[], cwd: string, timeout = 180_000) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, PATH, npm_config_update_notifier: 'false' }, timeout });
  expect(result.status, `${command} ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`).toBe(0);
  return result;
}

/** The production packages the lockfile pins at the top of node_modules, each one version only. */
function lockedProductionVersions(): Record<string, string> {
  const top = new Map<string, string>();
  const nested = new Map<string, Set<string>>();
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (!path.startsWith('node_modules/') || entry.dev === true || entry.devOptional === true || entry.version === undefined) continue;
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    if (path === `node_modules/${name}`) top.set(name, entry.version);
    else nested.set(name, (nested.get(name) ?? new Set()).add(entry.version));
  }
  return Object.fromEntries([...top].filter(([name, version]) => [...(nested.get(name) ?? [])].every((v) => v === version)));
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sms-worker-pack-'));
  const sources = join(work, 'sources');
  mkdirSync(sources);
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'LICENSE', 'README.md', 'src', 'schemas'])
    cpSync(join(root, entry), join(sources, entry), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(sources, 'node_modules'), 'dir');
  sh('npm', ['pack', '--pack-destination', work], sources);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  expect(tarball).toBeDefined();

  app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      name: 'pack-check',
      private: true,
      type: 'module',
      dependencies: { 'sms-worker': `file:../${tarball}` },
      overrides: lockedProductionVersions(),
    }),
  );
  sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], app, 300_000);
}, 420_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('ships dist/ with declarations, the schemas and the LICENSE, and no sources or tests', () => {
    const listed = sh('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], join(work, 'sources'));
    const files = (JSON.parse(listed.stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
    for (const file of ['LICENSE', 'package.json', 'dist/cli/main.js', 'dist/index.js', 'dist/index.d.ts', 'schemas/command.avsc', 'schemas/result.avsc'])
      expect(files).toContain(file);
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/') || f.startsWith('tools/'))).toEqual([]);
  });

  it('installs with the lockfile versions: the exact kafkajs the patches were written for', () => {
    const installed = JSON.parse(readFileSync(join(app, 'node_modules', 'kafkajs', 'package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(lock.packages['node_modules/kafkajs']?.version);
  });

  it('answers npx sms-worker --help with its commands', () => {
    const help = sh('npx', ['--no-install', 'sms-worker', '--help'], app);
    for (const command of ['run', 'receipts', 'produce', 'tail', 'redrive', 'sandbox']) expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\s`, 'm'));
  });

  it('exports the public API and the schemas to an ES module', () => {
    const script =
      "const m = await import('sms-worker'); const { existsSync } = await import('node:fs'); const { fileURLToPath } = await import('node:url');" +
      "console.log(typeof m.resultFromAvro, typeof m.commandToAvro, existsSync(fileURLToPath(import.meta.resolve('sms-worker/schemas/result.avsc'))), existsSync(m.SCHEMAS_DIR))";
    expect(sh(process.execPath, ['--input-type=module', '-e', script], app).stdout.trim()).toBe('function function true true');
  });

  it('gives a TypeScript consumer the contracts and readers, strictly type-checked', () => {
    writeFileSync(
      join(app, 'consumer.ts'),
      [
        "import { DEAD_LETTER_CODES, deadLetterFromAvro, resultFromAvro, SCHEMAS_DIR, type CommandResult, type DeadLetter, type SendCommand } from 'sms-worker';",
        'export const read = (value: unknown): CommandResult => resultFromAvro(value);',
        'export const letter = (value: unknown): DeadLetter => deadLetterFromAvro(value);',
        "export const code: 'UNKNOWN_SCHEMA_ID' = DEAD_LETTER_CODES.unknownSchemaId;",
        "export const command: Pick<SendCommand, 'commandId'> = { commandId: 'c-1' };",
        'export const where: string = SCHEMAS_DIR;',
        '// @ts-expect-error: a result has no such field',
        'export const wrong = (r: CommandResult) => r.noSuchField;',
      ].join('\n'),
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2023',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          resolveJsonModule: true,
          typeRoots: [join(root, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    sh(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], app);
  });

  describe('sms-worker run from the package, against the test stack', () => {
    const sandbox = useSandbox();
    const cleanups = useCleanups();

    it('sends one command and publishes its result', async () => {
      const topics = testTopics();
      await createWorkerTopics(topics, 3);
      // The installed bin itself (npx would take the SIGTERM for itself, not pass it on).
      const child = spawn(join(app, 'node_modules', '.bin', 'sms-worker'), ['run'], {
        cwd: app,
        env: { ...process.env, PATH, ...workerEnv(topics, sandbox.url), LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
      cleanups.add(() => child.kill('SIGKILL'));

      const results = await ResultCollector.start(topics.results);
      cleanups.add(() => results.stop());
      const publisher = await publisherFor(testKafka(), topics.commands);
      cleanups.add(() => publisher.disconnect());
      const command = textCommand();
      await publisher.publish([{ command }]);
      const got = await results.waitFor([command.commandId], 90_000).catch((error: unknown) => {
        throw new Error(`${String(error)}; worker output:\n${output.slice(-3_000)}`);
      });
      expect(got.get(command.commandId)?.outcome).toBe('SENT');
      expect(sandbox.state.requests({ correlationId: command.commandId })).toHaveLength(1);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }, 180_000);
  });
});
