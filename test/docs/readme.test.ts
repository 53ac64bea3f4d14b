import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envSchema, SECRET_VARIABLES } from '../../src/config/index.ts';
import { RECEIPTS_SECRET_VARIABLES, receiptsEnvSchema } from '../../src/receipts/config.ts';

const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');

/** Rows of the README's configuration table: `| `NAME` [🔒] | default | meaning |`. */
function configRows(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const match of readme.matchAll(/^\| `([A-Z0-9_]+)`( 🔒)? \| ([^|]+) \|/gm)) {
    rows.set(match[1] ?? '', (match[3] ?? '').trim());
  }
  return rows;
}

/** The worker's variables and the receipts receiver's own (README "Delivery receipts"). */
const documented: Record<string, { safeParse(value: undefined): { success: boolean; data?: unknown } }> = { ...envSchema.shape, ...receiptsEnvSchema.shape };

describe('README configuration table', () => {
  it('documents every variable the worker and the receipts receiver read, with its real default', () => {
    const rows = configRows();
    const problems: string[] = [];
    for (const [name, schema] of Object.entries(documented)) {
      const row = rows.get(name);
      if (row === undefined) {
        problems.push(`${name}: missing from the README`);
        continue;
      }
      const parsed = schema.safeParse(undefined);
      const expected = parsed.success && parsed.data !== undefined ? `\`${String(parsed.data)}\`` : undefined;
      if (expected !== undefined && row !== expected) problems.push(`${name}: README says ${row}, code says ${expected}`);
      if (expected === undefined && !row.startsWith('—')) problems.push(`${name}: README gives a default (${row}) the code does not have`);
    }
    for (const name of rows.keys()) if (!(name in documented)) problems.push(`${name}: in the README but not read by the worker or the receiver`);
    expect(problems).toEqual([]);
  });

  it('marks exactly the secret variables as secret', () => {
    const marked = [...readme.matchAll(/^\| `([A-Z0-9_]+)` 🔒 \|/gm)].map((m) => m[1]).sort();
    expect(marked).toEqual([...SECRET_VARIABLES, ...RECEIPTS_SECRET_VARIABLES].sort());
  });
});
