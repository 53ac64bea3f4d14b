import type { CommandResult } from '../contracts/result.ts';

/** One readable line per result, for `tail --pretty` and the demo. */
export function resultRow(result: CommandResult): Record<string, string> {
  const sent = result.outcome === 'SENT';
  return {
    commandId: result.commandId,
    operation: result.operation === 'TEXT_MESSAGE' ? 'text' : result.operation === 'VOICE_VERIFICATION' ? 'voice' : 'unknown',
    outcome: result.outcome,
    recipients: sent ? result.messages.map((m) => `${m.to} (${m.regionCode}, ${m.upstream}, ${m.price})`).join('; ') : '',
    amount: sent ? (result.totalAmount ?? '') : '',
    // The account that sent it (or ended it), after each one it left: `backup (after default: no-route 101301)`.
    account:
      (result.account ?? '') +
      ((result.failovers ?? []).length === 0 ? '' : ` (after ${(result.failovers ?? []).map((f) => `${f.account}: ${f.reason} ${f.code}`).join(', ')})`),
    error: result.error === null ? '' : `${result.error.code}: ${result.error.message}`,
  };
}

export function formatTable(rows: readonly Record<string, string>[], maxWidth = 70): string {
  if (rows.length === 0) return '(no results)';
  const columns = Object.keys(rows[0] ?? {});
  const cell = (value: string): string => (value.length > maxWidth ? `${value.slice(0, maxWidth - 1)}…` : value);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c] ?? '').length)));
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => v.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => cell(r[c] ?? ''))))].join('\n');
}
