// docs/architecture.md stays true to the code, mechanically where that is cheap: every file it
// names exists, every identifier it names is still in the code, and in its diagrams every solid
// arrow `A --> B` is an import from A to B while every dotted arrow `A -. how .-> B` (a call
// through a callback or a port) says how and is not an import (else it should be drawn solid).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importEdges, listSources, type ImportEdge } from '../../tools/check-imports.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const PAGE = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
const SOURCES = listSources(ROOT, ['src', 'tools']);

/** A diagram node: one module, or a folder (any module under it). */
type Target = { readonly file: string } | { readonly dir: string };

interface Arrow {
  readonly from: string;
  readonly to: string;
  readonly dotted: boolean;
  readonly label: string;
  readonly line: string;
}

interface Diagram {
  readonly nodes: Map<string, Target>;
  readonly arrows: Arrow[];
  /** Lines the parser did not understand (the test fails on any: nothing is skipped silently). */
  readonly unparsed: string[];
}

/**
 * The page's mermaid flowcharts. Conventions: a subgraph's title starts with its folder
 * (`src/kafka/ …`) and its nodes' labels start with a file name without `.ts`; a node outside a
 * subgraph is labelled with its path (`src/schema/codec`) or folder (`src/contracts/`).
 */
function diagrams(text: string): Diagram[] {
  return [...text.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((block) => {
    const nodes = new Map<string, Target>();
    const arrows: Arrow[] = [];
    const unparsed: string[] = [];
    const folders: string[] = [];
    for (const raw of (block[1] ?? '').split('\n')) {
      const line = raw.trim();
      if (line === '' || line.startsWith('%%') || /^flowchart\b/.test(line)) continue;
      let m: RegExpMatchArray | null;
      if ((m = /^subgraph\s+(\w+)\["(src\/[\w-]+\/)[^"]*"\]$/.exec(line))) {
        nodes.set(m[1]!, { dir: m[2]! });
        folders.push(m[2]!);
      } else if (line === 'end') {
        folders.pop();
      } else if ((m = /^(\w+)\[([^\]]+)\]$/.exec(line))) {
        const label = m[2]!.split('<br/>')[0]!.trim();
        const folder = folders[folders.length - 1];
        if (label.startsWith('src/')) nodes.set(m[1]!, label.endsWith('/') ? { dir: label } : { file: `${label}.ts` });
        else if (folder !== undefined && /^[\w.-]+$/.test(label)) nodes.set(m[1]!, { file: `${folder}${label}.ts` });
        else unparsed.push(line);
      } else if ((m = /^(\w+)\s+(?:--\s+(.+?)\s+)?-->\s+(\w+)$/.exec(line))) {
        arrows.push({ from: m[1]!, to: m[3]!, dotted: false, label: m[2] ?? '', line });
      } else if ((m = /^(\w+)\s+-\.\s+(.+?)\s+\.->\s+(\w+)$/.exec(line))) {
        arrows.push({ from: m[1]!, to: m[3]!, dotted: true, label: m[2]!, line });
      } else {
        unparsed.push(line);
      }
    }
    return { nodes, arrows, unparsed };
  });
}

const covers = (target: Target, file: string): boolean => ('file' in target ? file === target.file : file.startsWith(target.dir));
const exists = (target: Target): boolean => {
  const path = join(ROOT, 'file' in target ? target.file : target.dir);
  return existsSync(path) && ('file' in target ? statSync(path).isFile() : statSync(path).isDirectory());
};

describe('docs/architecture.md', () => {
  const charts = diagrams(PAGE);
  const edges: ImportEdge[] = importEdges(ROOT, SOURCES).filter((e) => e.local);
  const imports = (from: Target, to: Target): boolean => edges.some((e) => covers(from, e.from) && covers(to, e.target) && e.from !== e.target);

  it('has the two diagrams: the partition core and the send path', () => {
    expect(charts).toHaveLength(2);
    for (const chart of charts) {
      expect(chart.unparsed).toEqual([]);
      expect(chart.arrows.length).toBeGreaterThan(10);
    }
  });

  it('names in its diagrams only files and folders that exist, and draws arrows only between nodes it defines', () => {
    for (const chart of charts) {
      for (const [id, target] of chart.nodes) expect(exists(target), `${id}: ${JSON.stringify(target)}`).toBe(true);
      for (const arrow of chart.arrows) {
        expect(chart.nodes.has(arrow.from), arrow.line).toBe(true);
        expect(chart.nodes.has(arrow.to), arrow.line).toBe(true);
      }
    }
  });

  it('draws a solid arrow only where the module imports the other', () => {
    const missing = charts.flatMap((chart) =>
      chart.arrows.filter((a) => !a.dotted && !imports(chart.nodes.get(a.from)!, chart.nodes.get(a.to)!)).map((a) => a.line),
    );
    expect(missing).toEqual([]);
  });

  it('draws a dotted arrow (a call through a callback or a port) only with how it is made, and never for an import', () => {
    for (const chart of charts) {
      for (const arrow of chart.arrows.filter((a) => a.dotted)) {
        expect(arrow.label, arrow.line).not.toBe('');
        expect(imports(chart.nodes.get(arrow.from)!, chart.nodes.get(arrow.to)!), `${arrow.line}: an import, draw it solid`).toBe(false);
      }
    }
  });

  it('names only files that exist', () => {
    const named = new Set([...PAGE.matchAll(/`([\w./-]+\.(?:ts|avsc))`/g)].map((m) => m[1]!));
    expect(named.size).toBeGreaterThan(30);
    const names = new Set(SOURCES.map((f) => basename(f)));
    const missing = [...named].filter((path) => {
      if (/^(src|tools|test|bench|schemas)\//.test(path)) return !existsSync(join(ROOT, path));
      // `kafka/ports.ts`: under src/; a bare `partition-lane.ts`: some module of src/ or tools/ has that name.
      if (path.includes('/')) return !existsSync(join(ROOT, 'src', path));
      return !names.has(path);
    });
    expect(missing).toEqual([]);
  });

  it('names only identifiers and settings the code still has', () => {
    const code = SOURCES.map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n');
    // camelCase and PascalCase names (`commitTransaction`, `#scheduleCommit`, `WorkerParts`) and settings (`MAX_IN_FLIGHT`).
    const named = new Set([...PAGE.matchAll(/`#?([A-Za-z_][A-Za-z0-9_]*)`/g)].map((m) => m[1]!).filter((name) => /[a-z][A-Z]|^[A-Z][a-z]+[A-Z]|_/.test(name)));
    expect(named.size).toBeGreaterThan(30);
    const missing = [...named].filter((name) => !new RegExp(`\\b${name}\\b`).test(code));
    expect(missing).toEqual([]);
  });

  describe('one command, step by step', () => {
    const section = PAGE.slice(PAGE.indexOf('## One command, step by step'), PAGE.indexOf('## Retries and waits'));
    const steps = [...section.matchAll(/^\| (\d+) \| `([^`]+)` \| `([^`]+)` \| (\*\*up\*\*|\w+) \|/gm)].map((m) => ({
      step: Number(m[1]),
      file: m[2]!,
      fn: m[3]!,
      up: m[4] === '**up**',
    }));

    it('numbers its steps in order, each a file of src/ that has the function it names', () => {
      expect(steps.length).toBeGreaterThan(20);
      expect(steps.map((s) => s.step)).toEqual(steps.map((_s, i) => i + 1));
      for (const { step, file, fn } of steps) {
        const path = join(ROOT, 'src', file);
        expect(existsSync(path), `step ${step}: ${file}`).toBe(true);
        // Defined or handed over there: a function, method, property or class of that name.
        const name = fn.replace(/[$()*+.?[\\\]^{|}]/g, '\\$&');
        expect(
          new RegExp(`(?<![\\w#])${name}\\s*(\\(|:|=|<|\\{| extends| implements)`).test(readFileSync(path, 'utf8')),
          `step ${step}: ${fn} in ${file}`,
        ).toBe(true);
      }
    });

    it('states the counts its table has: distinct files, and the steps entered by a call back up a layer', () => {
      const files = new Set(steps.map((s) => s.file)).size;
      const ups = steps.filter((s) => s.up).map((s) => s.step);
      const stated = /\*\*(\d+) files, (\d+) up-calls\*\* \(steps ([\d, and]+);/.exec(section);
      expect(stated).not.toBeNull();
      expect(Number(stated?.[1])).toBe(files);
      expect(Number(stated?.[2])).toBe(ups.length);
      expect((stated?.[3] ?? '').split(/, | and /).map(Number)).toEqual(ups);
    });
  });
});
