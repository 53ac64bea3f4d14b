// The README is a front page and the manual lives in docs/: the front page stays short and keeps
// the two commands, every page and every former README section is reachable from it, and every
// relative link between the documents (files and #anchors) resolves.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const DOCUMENTS = ['README.md', ...DOCS, 'bench/README.md', 'helm/sms-worker/README.md'];

/** Markdown text outside fenced code blocks. */
function prose(text: string): string {
  let fenced = false;
  return text
    .split('\n')
    .filter((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return false;
      }
      return !fenced;
    })
    .join('\n');
}

/** GitHub's anchors for a document's headings (duplicates get -1, -2, …). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const match of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = (match[1] ?? '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** Relative link targets of a document: `[text](target)`, outside code. */
function links(text: string): string[] {
  const inline = prose(text).replace(/`[^`\n]*`/g, (code) => (code.includes('](') ? '' : code));
  return [...inline.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '').filter((t) => !/^[a-z]+:/i.test(t));
}

describe('the README as a front page', () => {
  const readme = read('README.md');

  it('is at most 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });

  it('keeps the two commands: one runs the demo, one passes the tests', () => {
    expect(readme).toContain('npm ci && npm run demo -- --once');
    expect(readme).toContain('npm ci && npm test');
  });

  it('links every page of docs/ and the performance figures', () => {
    const targets = new Set(links(readme).map((t) => t.split('#')[0]));
    for (const page of [...DOCS, 'bench/README.md']) expect(targets, `README links ${page}`).toContain(page);
  });

  it('reaches every section the manual used to have', () => {
    // [page, heading] of each former README section, in its new place.
    const sections: [string, string][] = [
      ['docs/contracts.md', 'contracts'],
      ['docs/contracts.md', 'validation'],
      ['docs/contracts.md', 'limits'],
      ['docs/guarantees.md', 'delivery-guarantees'],
      ['docs/guarantees.md', 'sends-are-at-most-once-the-intent-ledger'],
      ['docs/guarantees.md', 'how-a-command-is-processed'],
      ['docs/guarantees.md', 'what-unknown-means'],
      ['docs/provider-client.md', 'failure-classes'],
      ['docs/provider-client.md', 'retries-and-deadlines'],
      ['docs/provider-client.md', 'the-messaging-service-client'],
      ['docs/configuration.md', 'configuration'],
      ['docs/metrics.md', 'metrics-and-health'],
      ['docs/metrics.md', 'alerts'],
      ['docs/metrics.md', 'grafana-dashboard'],
      ['docs/receipts.md', 'delivery-receipts'],
      ['docs/operations.md', 'operations'],
      ['docs/operations.md', 'docker-image'],
      ['docs/operations.md', 'helm-chart'],
      ['docs/operations.md', 'scaling'],
      ['docs/operations.md', 'secured-kafka'],
      ['docs/operations.md', 'tracing'],
      ['docs/sandbox.md', 'the-sandbox'],
      ['docs/development.md', 'development'],
      ['docs/development.md', 'the-local-stack'],
      ['bench/README.md', 'latest-full-runs'],
    ];
    const linked = new Set(links(readme).map((t) => t.split('#')[0]));
    const missing = sections.filter(([page, anchor]) => !linked.has(page) || !anchors(read(page)).has(anchor));
    expect(missing).toEqual([]);
    // "A refusal stops only what it is about" is a step of "How a command is processed", kept whole.
    expect(read('docs/guarantees.md')).toContain('7. **A refusal stops only what it is about**');
  });
});

describe('links between the documents', () => {
  it.each(DOCUMENTS)('every relative link of %s resolves, #anchors included', (document) => {
    const broken: string[] = [];
    for (const target of links(read(document))) {
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? join(ROOT, document) : resolve(ROOT, dirname(document), path);
      if (!existsSync(file)) {
        broken.push(`${target}: no ${relative(ROOT, file)}`);
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (statSync(file).isDirectory() || !file.endsWith('.md')) {
        broken.push(`${target}: an anchor into a file that is not Markdown`);
        continue;
      }
      if (!anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, file)}`);
    }
    expect(broken).toEqual([]);
  });
});

describe('user documentation', () => {
  it('names no issue numbers and no commits (the git log keeps the history)', () => {
    const latestRuns = read('bench/README.md').split('\n## Latest full runs')[1] ?? '';
    expect(latestRuns).not.toBe('');
    const texts: [string, string][] = [
      ['README.md', read('README.md')],
      ...DOCS.filter((d) => !['docs/architecture.md', 'docs/messaging-service-api.md'].includes(d)).map((d): [string, string] => [d, read(d)]),
      ['bench/README.md#latest-full-runs', latestRuns],
    ];
    const found = texts.flatMap(([name, text]) => [...text.matchAll(/\bissue \d+|\bcommit `?[0-9a-f]{7,40}\b/gi)].map((m) => `${name}: ${m[0]}`));
    expect(found).toEqual([]);
  });
});
