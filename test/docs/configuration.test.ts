import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envSchema, SECRET_VARIABLES } from '../../src/config/index.ts';
import { RECEIPTS_SECRET_VARIABLES, receiptsEnvSchema } from '../../src/receipts/config.ts';

type Schema = Record<string, { safeParse(value: undefined): { success: boolean; data?: unknown } }>;

function page(name: string): string {
  return readFileSync(join(import.meta.dirname, '..', '..', 'docs', name), 'utf8');
}

/** Rows of a configuration table: `| `NAME` [🔒] | default | meaning |`. */
function configRows(text: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const match of text.matchAll(/^\| `([A-Z0-9_]+)`( 🔒)? \| ([^|]+) \|/gm)) {
    rows.set(match[1] ?? '', (match[3] ?? '').trim());
  }
  return rows;
}

/** What a page's table gets wrong against the variables a process reads. */
function problems(file: string, schema: Schema): string[] {
  const rows = configRows(page(file));
  const found: string[] = [];
  for (const [name, variable] of Object.entries(schema)) {
    const row = rows.get(name);
    if (row === undefined) {
      found.push(`${name}: missing from docs/${file}`);
      continue;
    }
    const parsed = variable.safeParse(undefined);
    const expected = parsed.success && parsed.data !== undefined ? `\`${String(parsed.data)}\`` : undefined;
    if (expected !== undefined && row !== expected) found.push(`${name}: docs/${file} says ${row}, code says ${expected}`);
    if (expected === undefined && !row.startsWith('—')) found.push(`${name}: docs/${file} gives a default (${row}) the code does not have`);
  }
  for (const name of rows.keys()) if (!(name in schema)) found.push(`${name}: in docs/${file} but not read there`);
  return found;
}

function markedSecret(file: string): string[] {
  return [...page(file).matchAll(/^\| `([A-Z0-9_]+)` 🔒 \|/gm)].map((m) => m[1] ?? '').sort();
}

describe('docs/configuration.md: the worker configuration table', () => {
  it('documents every variable the worker reads, with its real default, and no other', () => {
    expect(problems('configuration.md', envSchema.shape)).toEqual([]);
  });

  it('marks exactly the secret variables as secret', () => {
    expect(markedSecret('configuration.md')).toEqual([...SECRET_VARIABLES].sort());
  });
});

describe('docs/receipts.md: the receipts receiver configuration table', () => {
  it('documents every variable of its own the receiver reads, with its real default, and no other', () => {
    expect(problems('receipts.md', receiptsEnvSchema.shape)).toEqual([]);
  });

  it('marks exactly the secret variables as secret', () => {
    expect(markedSecret('receipts.md')).toEqual([...RECEIPTS_SECRET_VARIABLES].sort());
  });
});
