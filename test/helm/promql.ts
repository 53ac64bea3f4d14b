/**
 * The metric names a PromQL expression reads, without a PromQL parser: enough for the queries
 * of a dashboard or a rule file (selectors, functions, aggregations, binary operators, offsets,
 * subqueries). Label names and values, durations, functions, keywords, numbers and Grafana
 * variables are not metric names.
 */
const KEYWORDS = new Set([
  'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset',
  'and', 'or', 'unless', 'atan2', 'inf', 'nan', 'start', 'end',
]);
const NAME = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;

export function metricNames(expr: string): string[] {
  const text = expr
    // String literals first: they may contain anything, braces included.
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    // Label matchers, range and subquery windows, and modifier label lists.
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    // Grafana variables ($var, ${var}, $__interval) and PromQL durations after offset/@.
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ')
    .replace(/\boffset\s+-?\w+/g, ' ')
    .replace(/@\s*[\w.()]+/g, ' ');
  const names = new Set<string>();
  for (let i = 0; i < text.length; ) {
    NAME.lastIndex = i;
    const match = NAME.exec(text);
    const previous = text[i - 1] ?? ' ';
    if (match === null || /[0-9.]/.test(previous)) {
      i += 1;
      continue;
    }
    const word = match[0];
    i += word.length;
    // A name followed by "(" is a function or an aggregation.
    if (/^\s*\(/.test(text.slice(i))) continue;
    if (KEYWORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names].sort();
}
