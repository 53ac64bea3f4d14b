/**
 * Environment variables that look like settings of ours but are none: a misspelt name is
 * otherwise silently ignored (its default applies), which an operator finds out only from what
 * the worker does. Pure; the caller logs what it finds at start-up.
 */

/** Our own prefix: nothing the worker reads uses it, so any such variable is a mistake or a development tool's. */
const OWN_PREFIX = 'SMS_WORKER_';
/** Names shorter than this are not compared for misspellings (too many near misses among short names). */
const MIN_COMPARED_LENGTH = 8;

export interface UnknownVariable {
  readonly name: string;
  /** The known setting it is closest to, when it looks like a misspelling of one. */
  readonly didYouMean?: string;
}

/** The variables of `env` that are not in `known` and look like ours: `SMS_WORKER_*`, or within two edits of a known name. */
export function unknownVariables(env: NodeJS.ProcessEnv, known: readonly string[]): UnknownVariable[] {
  const knownSet = new Set(known);
  const out: UnknownVariable[] = [];
  for (const name of Object.keys(env).sort()) {
    if (knownSet.has(name)) continue;
    const near = name.length >= MIN_COMPARED_LENGTH ? closest(name, known) : undefined;
    if (near !== undefined) out.push({ name, didYouMean: near });
    else if (name.startsWith(OWN_PREFIX)) out.push({ name });
  }
  return out;
}

function closest(name: string, known: readonly string[]): string | undefined {
  const normal = name.toUpperCase().replace(/-/g, '_');
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    if (Math.abs(candidate.length - normal.length) > 2) continue;
    const distance = normal === candidate ? 0 : editDistance(normal, candidate, 2);
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Damerau–Levenshtein distance (adjacent transpositions count one), or `limit + 1` once it is certainly above `limit`. */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i += 1) {
    const row: number[] = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const above = rows[i - 1] as number[];
      let d = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > limit) return limit + 1;
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}
