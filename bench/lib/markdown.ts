/** Markdown tables and number formatting for the reports. */

export function table(header: readonly string[], rows: readonly (readonly string[])[], align?: readonly ('l' | 'r')[]): string {
  const rule = header.map((_, i) => ((align?.[i] ?? 'r') === 'l' ? ':--' : '--:'));
  return [header, rule, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

export function fmt(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return '–';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function ms(value: number): string {
  if (!Number.isFinite(value)) return '–';
  return value >= 10_000 ? `${fmt(value / 1000, 1)} s` : `${fmt(value)} ms`;
}

export function mb(bytes: number): string {
  return Number.isFinite(bytes) ? `${fmt(bytes / 1024 / 1024)} MB` : '–';
}
