/**
 * `npm run check:imports` (part of `npm run lint`): fails on an import cycle or a breach of the
 * layering rules below. Reads every import with the TypeScript parser (no type checking, so it
 * takes well under a second): static imports and re-exports, `import type` included (a cycle of
 * types is still a cycle of modules), dynamic `import()`, `import('…').Type` and `require('…')`.
 *
 *   node tools/check-imports.ts [--root <repository>] [dir…]   (default: this repository; src tools bench test)
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** One import of one module: `target` is a repository-relative path (a local module) or a package name. */
export interface ImportEdge {
  readonly from: string;
  readonly target: string;
  /** As written in the source. */
  readonly specifier: string;
  readonly line: number;
  readonly local: boolean;
}

/** A layering rule: modules matching `from` must not import modules (or packages) matching `forbidden`. */
export interface LayerRule {
  readonly name: string;
  /** Which importers the rule covers. */
  readonly from: (file: string) => boolean;
  /** Which imported targets (repository-relative paths, or package names) are forbidden to them. */
  readonly forbidden: (target: string) => boolean;
  readonly why: string;
}

export interface Breach {
  readonly rule: string;
  readonly edge: ImportEdge;
  readonly why: string;
}

/** Modules that import each other (a strongly connected component), and one loop through them. */
export interface ImportCycle {
  readonly modules: readonly string[];
  /** The shortest loop through the first module: starts and ends with it. */
  readonly loop: readonly string[];
}

export interface ImportReport {
  readonly files: number;
  /** Each tangle of modules that import each other once (see findCycles). */
  readonly cycles: readonly ImportCycle[];
  readonly breaches: readonly Breach[];
}

const under = (dir: string) => (file: string) => file.startsWith(`${dir}/`);
/** The package, or a subpath of it (`kafkajs/src/…`). */
const isPackage = (name: string) => (target: string) => target === name || target.startsWith(`${name}/`);

/** The project's layering (paths relative to the repository root). */
export const LAYER_RULES: readonly LayerRule[] = [
  {
    name: 'kafkajs-only-in-kafka',
    from: (file) => under('src')(file) && !under('src/kafka')(file),
    forbidden: isPackage('kafkajs'),
    why: 'only src/kafka/ knows kafkajs (types included): other modules use the ports of src/kafka/ports.ts',
  },
  {
    name: 'kafka-not-on-worker',
    from: under('src/kafka'),
    forbidden: under('src/worker'),
    why: 'src/kafka/ adapts the client for the worker and must not depend on it: move what both need to src/kafka/ or src/contracts/',
  },
  {
    name: 'composition-root',
    from: (file) => file !== 'src/worker/worker.ts' && file !== 'src/worker/wiring.ts',
    forbidden: (target) => target === 'src/worker/wiring.ts',
    why: 'src/worker/wiring.ts is the composition root: only the lifecycle (src/worker/worker.ts) imports it; shared types live in src/worker/parts.ts',
  },
];

const SOURCE = /\.(?:[cm]?ts|tsx)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', 'coverage', '.cache']);

/** The TypeScript files under `dirs` (relative to `root`), dependencies and build output left out. */
export function listSources(root: string, dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    const abs = path.join(root, rel);
    if (!existsSync(abs)) return;
    if (statSync(abs).isFile()) {
      if (SOURCE.test(rel) && !rel.endsWith('.d.ts')) out.push(toPosix(rel));
      return;
    }
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      if (entry.isDirectory() && SKIP_DIRS.has(entry.name)) continue;
      walk(path.join(rel, entry.name));
    }
  };
  for (const dir of dirs) walk(dir);
  return out.sort();
}

function toPosix(p: string): string {
  return p.split(path.sep).join('/');
}

/** The module specifiers of one file, with their lines. */
export function importsOf(fileName: string, text: string): { specifier: string; line: number }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: { specifier: string; line: number }[] = [];
  const add = (node: ts.Node | undefined): void => {
    if (node !== undefined && ts.isStringLiteralLike(node)) {
      found.push({ specifier: node.text, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 });
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    // `createRequire(…)`'s require (src/kafka/kafkajs.ts loads kafkajs so).
    else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require') add(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** A relative specifier's file (repository-relative), or undefined when it names no file. */
function resolveLocal(root: string, from: string, specifier: string): string | undefined {
  const base = path.join(root, path.dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return toPosix(path.relative(root, candidate));
  }
  return undefined;
}

export function importEdges(root: string, files: readonly string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const from of files) {
    for (const { specifier, line } of importsOf(from, readFileSync(path.join(root, from), 'utf8'))) {
      if (specifier.startsWith('.')) {
        const target = resolveLocal(root, from, specifier);
        // An unresolvable relative import is the type checker's to report.
        if (target !== undefined) edges.push({ from, target, specifier, line, local: true });
      } else {
        // A package (or a subpath of one, `kafkajs/src/…`: rules match a package and its subpaths).
        edges.push({ from, target: specifier, specifier, line, local: false });
      }
    }
  }
  return edges;
}

/**
 * Every cycle among the local modules: one per strongly connected component of more than one
 * module (or a module importing itself), with the shortest loop through its first module.
 */
export function findCycles(edges: readonly ImportEdge[]): ImportCycle[] {
  const graph = new Map<string, string[]>();
  for (const edge of edges) {
    if (!edge.local) continue;
    const targets = graph.get(edge.from) ?? [];
    if (!targets.includes(edge.target)) targets.push(edge.target);
    graph.set(edge.from, targets);
    if (!graph.has(edge.target)) graph.set(edge.target, []);
  }
  for (const targets of graph.values()) targets.sort();

  // Tarjan's strongly connected components, iteratively (no recursion limit on deep import chains).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const start of [...graph.keys()].sort()) {
    if (index.has(start)) continue;
    const work: { node: string; child: number }[] = [{ node: start, child: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = graph.get(frame.node)!;
      if (frame.child < targets.length) {
        const target = targets[frame.child++]!;
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, child: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component.sort());
      }
    }
  }

  const cycles: ImportCycle[] = [];
  for (const component of components) {
    const first = component[0]!;
    if (component.length === 1 && !graph.get(first)!.includes(first)) continue;
    const members = new Set(component);
    // Breadth-first from `first` back to itself, inside the component.
    const previous = new Map<string, string>();
    const queue = [first];
    let found = false;
    while (queue.length > 0 && !found) {
      const node = queue.shift()!;
      for (const target of graph.get(node)!) {
        if (!members.has(target)) continue;
        if (target === first) {
          previous.set(first, node);
          found = true;
          break;
        }
        if (previous.has(target)) continue;
        previous.set(target, node);
        queue.push(target);
      }
    }
    const loop = [first];
    for (let node = previous.get(first)!; node !== first; node = previous.get(node)!) loop.unshift(node);
    loop.unshift(first);
    cycles.push({ modules: component, loop });
  }
  return cycles.sort((a, b) => a.loop[0]!.localeCompare(b.loop[0]!));
}

export function findBreaches(edges: readonly ImportEdge[], rules: readonly LayerRule[]): Breach[] {
  const breaches: Breach[] = [];
  for (const edge of edges) {
    for (const rule of rules) {
      if (rule.from(edge.from) && rule.forbidden(edge.target)) breaches.push({ rule: rule.name, edge, why: rule.why });
    }
  }
  return breaches;
}

export function checkImports(root: string, dirs: readonly string[], rules: readonly LayerRule[] = LAYER_RULES): ImportReport {
  const files = listSources(root, dirs);
  const edges = importEdges(root, files);
  return { files: files.length, cycles: findCycles(edges), breaches: findBreaches(edges, rules) };
}

export function formatReport(report: ImportReport): string {
  const lines: string[] = [];
  for (const { modules, loop } of report.cycles) {
    const others = modules.filter((m) => !loop.includes(m));
    lines.push(`import cycle: ${loop.join(' → ')}${others.length === 0 ? '' : ` (tangled with ${others.join(', ')})`}`);
  }
  for (const { rule, edge, why } of report.breaches) lines.push(`${edge.from}:${edge.line}: imports '${edge.specifier}' (${rule}: ${why})`);
  const problems = report.cycles.length + report.breaches.length;
  lines.push(
    problems === 0
      ? `imports: ${report.files} files, no cycle, layering kept`
      : `imports: ${report.cycles.length} cycle(s), ${report.breaches.length} layering breach(es) in ${report.files} files`,
  );
  return lines.join('\n');
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--root');
  const root = at === -1 ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..') : path.resolve(args.splice(at, 2)[1] ?? '.');
  const report = checkImports(root, args.length > 0 ? args : ['src', 'tools', 'bench', 'test']);
  const text = formatReport(report);
  if (report.cycles.length + report.breaches.length > 0) {
    console.error(text);
    process.exitCode = 1;
  } else {
    console.log(text);
  }
}
