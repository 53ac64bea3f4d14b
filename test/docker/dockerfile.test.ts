// Static checks of the Dockerfile (no Docker engine needed). They catch the mistakes that would
// otherwise only show up in a CI image build or, worse, at runtime in the cluster: a COPY of a
// path that does not exist or is excluded by .dockerignore, an entry point that does not match
// the compiled CLI, a shell-form ENTRYPOINT that swallows SIGTERM, running as root.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

interface Stage {
  readonly name: string | undefined;
  readonly base: string;
  readonly instructions: Instruction[];
}

interface CopySpec {
  readonly from: string | undefined;
  readonly sources: string[];
  readonly dest: string;
}

/** Split a Dockerfile into instructions: joins `\` continuations, drops comments and blank lines. */
function parseInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  let buffer = '';
  let startLine = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? '';
    const trimmed = raw.trim();
    if (buffer === '' && (trimmed === '' || trimmed.startsWith('#'))) continue;
    // Comment lines inside a continuation are ignored by Docker too.
    if (buffer !== '' && trimmed.startsWith('#')) continue;
    if (buffer === '') startLine = i + 1;
    if (trimmed.endsWith('\\')) {
      buffer += `${trimmed.slice(0, -1)} `;
      continue;
    }
    buffer += trimmed;
    const match = /^(\S+)\s*(.*)$/s.exec(buffer);
    if (match) out.push({ keyword: (match[1] ?? '').toUpperCase(), args: (match[2] ?? '').trim(), line: startLine });
    buffer = '';
  }
  expect(buffer, 'Dockerfile ends inside a line continuation').toBe('');
  return out;
}

/** Global ARG defaults (before the first FROM), used to resolve `FROM ${NODE_IMAGE}`. */
function globalArgs(instructions: Instruction[]): Map<string, string> {
  const args = new Map<string, string>();
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') break;
    if (ins.keyword !== 'ARG') continue;
    const [name, value] = ins.args.split('=', 2);
    if (name !== undefined && value !== undefined) args.set(name, unquote(value));
  }
  return args;
}

function unquote(value: string): string {
  return value.replace(/^"(.*)"$/s, '$1').replace(/^'(.*)'$/s, '$1');
}

function substitute(value: string, args: Map<string, string>): string {
  return value.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (whole, name: string) => args.get(name) ?? whole);
}

function parseStages(instructions: Instruction[]): Stage[] {
  const args = globalArgs(instructions);
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const parts = ins.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const base = substitute(parts[0] ?? '', args);
      const name = parts[1]?.toUpperCase() === 'AS' ? parts[2] : undefined;
      stages.push({ name, base, instructions: [] });
    } else if (stages.length > 0) {
      stages.at(-1)?.instructions.push(ins);
    }
  }
  return stages;
}

/** Parse `COPY [--from=x] [--chown=..] src... dest` (shell or JSON form). */
function parseCopy(args: string): CopySpec {
  let rest = args;
  let from: string | undefined;
  for (;;) {
    const flag = /^--([a-z-]+)(?:=(\S+))?\s+/.exec(rest);
    if (!flag) break;
    if (flag[1] === 'from') from = flag[2];
    rest = rest.slice(flag[0].length);
  }
  const parts: string[] = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
  expect(parts.length, `COPY needs a source and a destination: ${args}`).toBeGreaterThanOrEqual(2);
  return { from, sources: parts.slice(0, -1), dest: parts.at(-1) ?? '' };
}

/** Exec-form (JSON array) arguments, or undefined for shell form. */
function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(args);
  return Array.isArray(parsed) && parsed.every((p) => typeof p === 'string') ? (parsed as string[]) : undefined;
}

/** KEY=VALUE pairs of ENV / LABEL (quoted values allowed). */
function keyValues(args: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of args.matchAll(/([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    out.set(m[1] ?? '', unquote(m[2] ?? ''));
  }
  return out;
}

function only<T>(items: T[], what: string): T {
  expect(items, what).toHaveLength(1);
  return items[0] as T;
}

/**
 * The .dockerignore is an allowlist (`*` then `!path` re-includes). A context path is sent to the
 * build iff it is, or lies under, a re-included path. Rejecting any other layout keeps this check
 * honest instead of half-implementing Docker's matcher.
 */
function dockerignoreAllows(patterns: string[], source: string): boolean {
  const normalized = path.posix.normalize(source).replace(/^\.\/|\/$/g, '');
  return patterns
    .filter((p) => p.startsWith('!'))
    .map((p) => p.slice(1).replace(/^\/|\/$/g, ''))
    .some((p) => normalized === p || normalized.startsWith(`${p}/`));
}

const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
const instructions = parseInstructions(dockerfile);
const stages = parseStages(instructions);
const runtime = stages.at(-1) as Stage;
const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
  license: string;
};
const ignorePatterns = readFileSync(path.join(repoRoot, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));

function stageInstructions(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

describe('Dockerfile', () => {
  it('is multi-stage: a Node 24 bookworm-slim build stage and a Node 24 slim/distroless runtime', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((s) => s.name === 'build');
    expect(build, 'a stage named "build"').toBeDefined();
    expect(build?.base).toMatch(/^node:24-bookworm-slim(@sha256:[a-f0-9]{64})?$/);
    expect(runtime.base).toMatch(/^(node:24(\.\d+)*-(bookworm|trixie)-slim|gcr\.io\/distroless\/nodejs24-debian1[23](:[a-z0-9-]+)?)(@sha256:[a-f0-9]{64})?$/);
    expect(runtime.name).not.toBe('build');
  });

  it('build stage installs, compiles and drops devDependencies', () => {
    const build = stages.find((s) => s.name === 'build') as Stage;
    const runs = stageInstructions(build, 'RUN').map((i) => i.args);
    const all = runs.join('\n');
    expect(all).toMatch(/\bnpm ci\b/);
    expect(all).toMatch(/\bnpm run build\b/);
    // Either prune after building or install production-only into what the runtime copies.
    expect(all).toMatch(/\bnpm prune --omit=dev\b|\bnpm ci\b[^\n]*--omit=dev/);
    const buildIdx = runs.findIndex((r) => /\bnpm run build\b/.test(r));
    const pruneIdx = runs.findIndex((r) => /--omit=dev/.test(r));
    expect(pruneIdx, 'devDependencies must be dropped after (or together with) the build').toBeGreaterThanOrEqual(buildIdx);
  });

  it('every COPY from the build context exists and is not excluded by .dockerignore', () => {
    expect(ignorePatterns[0], '.dockerignore must be an allowlist starting with "*"').toBe('*');
    const contextCopies = stages.flatMap((s) =>
      stageInstructions(s, 'COPY')
        .concat(stageInstructions(s, 'ADD'))
        .map((i) => parseCopy(i.args))
        .filter((c) => c.from === undefined),
    );
    expect(contextCopies.length).toBeGreaterThan(0);
    for (const copy of contextCopies) {
      for (const source of copy.sources) {
        expect(source, 'copying the whole context defeats the allowlist').not.toMatch(/^\.\/?$/);
        expect(existsSync(path.join(repoRoot, source)), `COPY source ${source} exists in the repo`).toBe(true);
        expect(dockerignoreAllows(ignorePatterns, source), `COPY source ${source} is re-included in .dockerignore`).toBe(true);
      }
    }
  });

  it('the sources it copies hold no development tooling: no tools/, bench/, test/, and no import of a dev dependency or of a file outside them', () => {
    const pkgDeps = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const contextSources = stages.flatMap((s) =>
      stageInstructions(s, 'COPY')
        .map((i) => parseCopy(i.args))
        .filter((c) => c.from === undefined)
        .flatMap((c) => c.sources.map((source) => path.posix.normalize(source).replace(/\/$/, ''))),
    );
    for (const source of contextSources)
      expect(['tools', 'bench', 'test', 'scripts', 'stack'].includes(source.split('/')[0] ?? ''), `COPY ${source}`).toBe(false);
    const inside = (file: string): boolean =>
      contextSources.some((s) => file === path.join(repoRoot, s) || file.startsWith(`${path.join(repoRoot, s)}${path.sep}`));
    const problems: string[] = [];
    const visit = (file: string): void => {
      if (statSync(file).isDirectory()) {
        for (const entry of readdirSync(file)) visit(path.join(file, entry));
        return;
      }
      if (!file.endsWith('.ts')) return;
      const text = readFileSync(file, 'utf8');
      // Value imports only: `import type` is erased by the compiler and needs nothing at run time.
      const specifiers = [
        ...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm),
        ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
      ].map((m) => m[1] ?? '');
      for (const specifier of specifiers) {
        const where = path.relative(repoRoot, file);
        if (specifier.startsWith('.')) {
          if (!inside(path.resolve(path.dirname(file), specifier))) problems.push(`${where} imports ${specifier}, which the image does not contain`);
        } else if (!specifier.startsWith('node:')) {
          const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] ?? '');
          if (!(name in pkgDeps.dependencies)) problems.push(`${where} imports ${specifier}, not a production dependency`);
        }
      }
    };
    for (const source of contextSources) visit(path.join(repoRoot, source));
    expect(problems).toEqual([]);
  });

  it('every COPY --from names an earlier stage and a path that stage produces', () => {
    const tsBuild = JSON.parse(readFileSync(path.join(repoRoot, 'tsconfig.build.json'), 'utf8')) as {
      compilerOptions: { outDir: string };
    };
    stages.forEach((stage, index) => {
      for (const ins of stageInstructions(stage, 'COPY')) {
        const copy = parseCopy(ins.args);
        if (copy.from === undefined) continue;
        const producerIndex = stages.findIndex((s) => s.name === copy.from);
        expect(producerIndex, `COPY --from=${copy.from} (line ${ins.line}) names a stage`).toBeGreaterThanOrEqual(0);
        expect(producerIndex, `COPY --from=${copy.from} must reference an earlier stage`).toBeLessThan(index);
        const producer = stages[producerIndex] as Stage;
        const workdir = only(stageInstructions(producer, 'WORKDIR'), `one WORKDIR in stage ${copy.from}`).args;
        const runs = stageInstructions(producer, 'RUN')
          .map((i) => i.args)
          .join('\n');
        const copiedIn = stageInstructions(producer, 'COPY').flatMap((i) => parseCopy(i.args).sources);
        for (const source of copy.sources) {
          const rel = path.posix.relative(workdir, source);
          expect(rel.startsWith('..'), `${source} lies inside ${copy.from}'s WORKDIR ${workdir}`).toBe(false);
          const produced =
            (rel === tsBuild.compilerOptions.outDir && /\bnpm run build\b/.test(runs)) ||
            (rel === 'node_modules' && /\bnpm ci\b/.test(runs)) ||
            copiedIn.includes(rel);
          expect(produced, `${source} is produced by stage ${copy.from} (line ${ins.line})`).toBe(true);
        }
      }
    });
  });

  it('runtime stage ships production dependencies, dist, schemas and package.json only', () => {
    const copies = stageInstructions(runtime, 'COPY').map((i) => parseCopy(i.args));
    const dests = copies.map((c) => path.posix.basename(c.dest.replace(/\/$/, '')));
    expect(dests).toEqual(expect.arrayContaining(['node_modules', 'dist', 'schemas']));
    expect(copies.some((c) => c.sources.includes('package.json'))).toBe(true);
    expect(copies.some((c) => c.sources.some((s) => s === 'src' || s.startsWith('src/')))).toBe(false);
    const schemaFiles = readdirSync(path.join(repoRoot, 'schemas')).filter((f) => f.endsWith('.avsc'));
    expect(schemaFiles.length, 'schemas/*.avsc are read at runtime').toBeGreaterThan(0);
  });

  it('runtime stage runs as a numeric non-root user', () => {
    const user = stageInstructions(runtime, 'USER').at(-1);
    expect(user, 'runtime stage sets USER').toBeDefined();
    const [uid, gid] = (user?.args ?? '').split(':');
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
    if (gid !== undefined) {
      expect(gid).toMatch(/^\d+$/);
      expect(Number(gid)).toBeGreaterThan(0);
    }
    // The user switch must come after the last RUN/COPY that needs root, i.e. be the last of them.
    const lastRootStep = Math.max(...runtime.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.line));
    expect(user?.line).toBeGreaterThan(lastRootStep);
  });

  it('ENTRYPOINT is exec-form node on the package.json bin, CMD defaults to run', () => {
    const entrypoint = execForm(only(stageInstructions(runtime, 'ENTRYPOINT'), 'one ENTRYPOINT').args);
    expect(entrypoint, 'ENTRYPOINT must be exec form (JSON array) so SIGTERM reaches node').toBeDefined();
    expect(entrypoint?.[0]).toBe('node');
    expect(entrypoint?.length).toBe(2);
    expect(Object.values(pkg.bin)).toContain(entrypoint?.[1]);
    expect(pkg.bin['sms-worker']).toBe('dist/cli/main.js');
    // Relative entry path: resolved against the runtime WORKDIR, where dist/ is copied.
    const workdir = stageInstructions(runtime, 'WORKDIR').at(-1)?.args;
    expect(workdir).toBeDefined();
    const distCopy = stageInstructions(runtime, 'COPY')
      .map((i) => parseCopy(i.args))
      .find((c) => c.sources.some((s) => s.endsWith('/dist') || s === 'dist'));
    expect(path.posix.resolve(workdir ?? '/', distCopy?.dest ?? '')).toBe(path.posix.join(workdir ?? '/', 'dist'));
    expect(execForm(only(stageInstructions(runtime, 'CMD'), 'one CMD').args)).toEqual(['run']);
  });

  it('the entry point is compiled from an existing source file', () => {
    const tsBuild = JSON.parse(readFileSync(path.join(repoRoot, 'tsconfig.build.json'), 'utf8')) as {
      compilerOptions: { rootDir: string; outDir: string };
    };
    const bin = pkg.bin['sms-worker'] ?? '';
    const rel = path.posix.relative(tsBuild.compilerOptions.outDir, bin);
    const source = path.join(repoRoot, tsBuild.compilerOptions.rootDir, rel.replace(/\.js$/, '.ts'));
    expect(existsSync(source) && statSync(source).isFile(), `${path.relative(repoRoot, source)} exists`).toBe(true);
  });

  it('sets NODE_ENV=production and exposes the metrics port', () => {
    const env = new Map(stageInstructions(runtime, 'ENV').flatMap((i) => [...keyValues(i.args)]));
    expect(env.get('NODE_ENV')).toBe('production');
    const exposed = stageInstructions(runtime, 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    expect(exposed).toContain('9464');
  });

  it('has OCI labels, with version and revision coming from build args', () => {
    const labels = new Map(stageInstructions(runtime, 'LABEL').flatMap((i) => [...keyValues(i.args)]));
    for (const key of ['title', 'description', 'version', 'revision', 'created', 'source', 'licenses']) {
      expect(labels.get(`org.opencontainers.image.${key}`), `label org.opencontainers.image.${key}`).toBeTruthy();
    }
    expect(labels.get('org.opencontainers.image.licenses')).toBe(pkg.license);
    const stageArgs = stageInstructions(runtime, 'ARG').map((i) => i.args.split('=')[0]);
    for (const [label, arg] of [
      ['version', 'VERSION'],
      ['revision', 'REVISION'],
    ] as const) {
      expect(labels.get(`org.opencontainers.image.${label}`)).toBe(`\${${arg}}`);
      expect(stageArgs, `ARG ${arg} declared in the runtime stage`).toContain(arg);
    }
  });
});
