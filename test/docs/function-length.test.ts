import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md: no function of the worker's decisions, its lanes and its admission is over
 * 70 lines, so each reads on one screen. The wiring (wiring.ts, source-wiring.ts, worker.ts) is
 * left out: it constructs and connects the parts, one after another, and says so where it is long.
 */
const MAX_LINES = 70;
const WIRING = new Set(['src/worker/wiring.ts', 'src/worker/source/source-wiring.ts', 'src/worker/worker.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [relative(process.cwd(), path)] : [];
  });
}

/** Every function, method, accessor or arrow function longer than `max` lines, as `file:line name (n lines)`. */
function longFunctions(file: string, max: number): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
      const name = node.name === undefined ? '(anonymous)' : node.name.getText(source);
      if (lines > max) out.push(`${file}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

describe('function length in the worker', () => {
  const files = sources('src/worker').filter((file) => !WIRING.has(file));

  it(`no function of the protocol, the lanes, the sending and admission, the guards, priorities and tenants is over ${MAX_LINES} lines`, () => {
    expect(files.length).toBeGreaterThan(40);
    expect(files.flatMap((file) => longFunctions(file, MAX_LINES))).toEqual([]);
  });

  it('the check sees a long function (the wiring has some)', () => {
    expect([...WIRING].flatMap((file) => longFunctions(file, MAX_LINES)).length).toBeGreaterThan(0);
  });
});
