import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkImports, formatReport, importsOf } from '../../tools/check-imports.ts';
import { useCleanups } from '../helpers/fixtures.ts';

const ROOT = path.join(import.meta.dirname, '..', '..');
const CHECKER = path.join(ROOT, 'tools', 'check-imports.ts');

/** A throw-away tree (written at run time, so no fixture is linted, type-checked or formatted). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'check-imports-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  cleanups.add(() => rmSync(root, { recursive: true, force: true }));
  return root;
}
const cleanups = useCleanups();

describe('importsOf', () => {
  it('reads static, type-only, re-exported and dynamic imports, import types and require', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from './b.ts';",
      "export { c } from './c.ts';",
      "export * from './d.ts';",
      "const e = await import('./e.ts');",
      "type F = import('./f.ts').F;",
      "import 'kafkajs';",
      "const g = require('kafkajs/src/g.js');",
    ].join('\n');
    expect(importsOf('x.ts', text).map((i) => i.specifier)).toEqual([
      './a.ts',
      './b.ts',
      './c.ts',
      './d.ts',
      './e.ts',
      './f.ts',
      'kafkajs',
      'kafkajs/src/g.js',
    ]);
  });
});

describe('checkImports', () => {
  it('passes a tree without cycles or layering breaches', () => {
    const root = tree({
      'src/kafka/client.ts': "import type { Kafka } from 'kafkajs';\nexport type K = Kafka;\n",
      'src/worker/parts.ts': "import type { K } from '../kafka/client.ts';\nexport type P = K;\n",
      'src/worker/wiring.ts': "import type { P } from './parts.ts';\nexport type W = P;\n",
      'src/worker/worker.ts': "import type { W } from './wiring.ts';\nexport type R = W;\n",
    });
    const report = checkImports(root, ['src']);
    expect(report).toEqual({ files: 4, cycles: [], breaches: [] });
    expect(formatReport(report)).toBe('imports: 4 files, no cycle, layering kept');
  });

  it('reports a cycle (type-only imports included) with the modules tangled in it', () => {
    const root = tree({
      'src/a.ts': "import type { B } from './b.ts';\nexport type A = B;\n",
      'src/b.ts': "import { c } from './c.ts';\nexport type B = typeof c;\n",
      'src/c.ts': "import type { A } from './a.ts';\nimport type { D } from './d.ts';\nexport const c = 1 as unknown as A | D;\n",
      'src/d.ts': "import type { C } from './c.ts';\nexport type D = C;\n",
      'src/self.ts': "export * from './self.ts';\n",
      'src/free.ts': "import type { A } from './a.ts';\nexport type F = A;\n",
    });
    const report = checkImports(root, ['src']);
    expect(report.cycles).toEqual([
      { modules: ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/d.ts'], loop: ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/a.ts'] },
      { modules: ['src/self.ts'], loop: ['src/self.ts', 'src/self.ts'] },
    ]);
    expect(formatReport(report)).toContain('import cycle: src/a.ts → src/b.ts → src/c.ts → src/a.ts (tangled with src/d.ts)');
  });

  it('reports each layering breach: kafkajs outside kafka/, kafka/ on worker/, the composition root imported', () => {
    const root = tree({
      'src/receipts/publisher.ts': "import type { Producer } from 'kafkajs';\nexport type P = Producer;\n",
      'src/cli/tail.ts': "import { x } from 'kafkajs/src/consumer/x.js';\nexport const y = x;\n",
      'src/kafka/ledger-store.ts': "import type { C } from '../worker/checkpoint.ts';\nexport type L = C;\n",
      'src/worker/checkpoint.ts': 'export type C = number;\n',
      'src/worker/wiring.ts': 'export const connect = 1;\n',
      'src/worker/worker.ts': "import { connect } from './wiring.ts';\nexport const run = connect;\n",
      'src/worker/lag.ts': "import { connect } from './wiring.ts';\nexport const lag = connect;\n",
    });
    const report = checkImports(root, ['src']);
    expect(report.cycles).toEqual([]);
    expect(report.breaches.map((b) => `${b.rule} ${b.edge.from}:${b.edge.line} ${b.edge.specifier}`).sort()).toEqual([
      'composition-root src/worker/lag.ts:1 ./wiring.ts',
      'kafka-not-on-worker src/kafka/ledger-store.ts:1 ../worker/checkpoint.ts',
      'kafkajs-only-in-kafka src/cli/tail.ts:1 kafkajs/src/consumer/x.js',
      'kafkajs-only-in-kafka src/receipts/publisher.ts:1 kafkajs',
    ]);
  });
});

describe('node tools/check-imports.ts', () => {
  it('exits non-zero and names every problem when there are any', () => {
    const root = tree({
      'src/a.ts': "import type { B } from './b.ts';\nexport type A = B;\n",
      'src/b.ts': "import type { A } from './a.ts';\nexport type B = A;\n",
      'src/receipts/r.ts': "import type { Kafka } from 'kafkajs';\nexport type R = Kafka;\n",
    });
    const run = spawnSync(process.execPath, [CHECKER, '--root', root, 'src'], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('import cycle: src/a.ts → src/b.ts → src/a.ts');
    expect(run.stderr).toContain("src/receipts/r.ts:1: imports 'kafkajs' (kafkajs-only-in-kafka:");
    expect(run.stderr).toContain('imports: 1 cycle(s), 1 layering breach(es) in 3 files');
  });

  it('exits 0 on this repository', () => {
    const run = spawnSync(process.execPath, [CHECKER], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
