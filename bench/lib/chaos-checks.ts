/**
 * The chaos run's judgements, kept pure (no I/O) so they can be unit-tested: sends per command
 * from the sandbox's request log, per-key order of the sends, the sends in flight at a kill, and
 * the verdict on one stream of commands (each priority has its own).
 */
import type { LoggedRequest } from './request-log.ts';

export interface SendsOfCommand {
  /** Requests that reached the sandbox with this correlation id (503s and 105400s included). */
  requests: number;
  /** Requests the sandbox processed and charged: real sends. */
  accepted: number;
  /** Arrival seq and time of the first request. */
  firstSeq: number;
  firstAt: number;
}

export function sendsPerCommand(requests: Iterable<LoggedRequest>): Map<string, SendsOfCommand> {
  const out = new Map<string, SendsOfCommand>();
  for (const r of requests) {
    if (r.correlationId === undefined) continue;
    const s = out.get(r.correlationId);
    if (s === undefined) {
      out.set(r.correlationId, { requests: 1, accepted: r.accepted ? 1 : 0, firstSeq: r.seq, firstAt: r.receivedAt });
      continue;
    }
    s.requests += 1;
    if (r.accepted) s.accepted += 1;
    if (r.seq < s.firstSeq) {
      s.firstSeq = r.seq;
      s.firstAt = r.receivedAt;
    }
  }
  return out;
}

export interface OrderReport {
  readonly keys: number;
  /** Adjacent pairs (in publish order, among the key's commands that reached the sandbox) compared. */
  readonly pairs: number;
  readonly violations: number;
  readonly examples: readonly string[];
  /** The first violations: `later` (in publish order) reached the sandbox before `earlier`. */
  readonly violating: readonly { readonly key: string; readonly earlier: string; readonly later: string }[];
}

/**
 * For each key, the commands that reached the sandbox must have reached it (first request) in
 * publish order: each adjacent pair of such commands whose first requests arrived the other way
 * round is one violation.
 */
export function orderViolations(
  publishOrderByKey: ReadonlyMap<string, readonly string[]>,
  sends: ReadonlyMap<string, SendsOfCommand>,
  maxExamples = 10,
): OrderReport {
  let pairs = 0;
  let violations = 0;
  const examples: string[] = [];
  const violating: { key: string; earlier: string; later: string }[] = [];
  for (const [key, ids] of publishOrderByKey) {
    let previous: { id: string; seq: number } | undefined;
    for (const id of ids) {
      const s = sends.get(id);
      if (s === undefined) continue;
      if (previous !== undefined) {
        pairs += 1;
        if (s.firstSeq < previous.seq) {
          violations += 1;
          if (examples.length < maxExamples) {
            examples.push(`key ${key}: ${id} (request #${s.firstSeq}) before ${previous.id} (request #${previous.seq})`);
            violating.push({ key, earlier: previous.id, later: id });
          }
        }
      }
      previous = { id, seq: s.firstSeq };
    }
  }
  return { keys: publishOrderByKey.size, pairs, violations, examples, violating };
}

/**
 * Sends in flight at instant `at`: commands among `candidates` whose first request had reached
 * the sandbox at or before `at` and whose result was not yet visible (committed) at `at`.
 */
export function inFlightAt(
  at: number,
  candidates: Iterable<string>,
  sends: ReadonlyMap<string, SendsOfCommand>,
  resultVisibleAt: ReadonlyMap<string, number>,
): string[] {
  const out: string[] = [];
  for (const id of candidates) {
    const s = sends.get(id);
    if (s === undefined || s.firstAt > at) continue;
    const visible = resultVisibleAt.get(id);
    if (visible === undefined || visible > at) out.push(id);
  }
  return out;
}

/** What the chaos run verifies of one stream of commands (the normal topic's, or the priority topic's). */
export interface StreamCheck {
  /** Distinct command ids in the topic. */
  readonly commandsIn: number;
  /** Their records (a publish retried after an error may repeat one). */
  readonly records: number;
  /** Committed results of those commands. */
  readonly resultsOut: number;
  readonly missing: readonly string[];
  readonly duplicated: readonly string[];
  /** Commands of the stream the service accepted (charged) more than once. */
  readonly sentTwice: readonly string[];
  readonly unknownResults: number;
  readonly order: OrderReport;
  /** Why the stream fails (lost, answered twice, sent twice, fewer commands in than published); empty: it passes. */
  readonly failures: readonly string[];
}

/**
 * The verdict on one stream: every command in its topic has exactly one committed result and was
 * accepted by the service at most once, and `expected` commands reached the topic. Per-key order
 * is counted and reported with it, as for the run as a whole.
 */
export function checkStream(s: {
  readonly expected: number;
  /** Records per command id in the stream's topic. */
  readonly recordsPerCommand: ReadonlyMap<string, number>;
  /** Committed results per command id (any ids; only the stream's are looked at). */
  readonly results: ReadonlyMap<string, readonly { readonly outcome: string }[]>;
  readonly sends: ReadonlyMap<string, SendsOfCommand>;
  /** Per key, the stream's command ids in publish order. */
  readonly orderByKey: ReadonlyMap<string, readonly string[]>;
}): StreamCheck {
  const ids = [...s.recordsPerCommand.keys()];
  const count = (id: string): number => s.results.get(id)?.length ?? 0;
  const missing = ids.filter((id) => count(id) === 0);
  const duplicated = ids.filter((id) => count(id) > 1);
  const sentTwice = ids.filter((id) => (s.sends.get(id)?.accepted ?? 0) > 1);
  const failures: string[] = [];
  if (missing.length > 0) failures.push(`${missing.length} commands without a result`);
  if (duplicated.length > 0) failures.push(`${duplicated.length} commands with more than one result`);
  if (sentTwice.length > 0) failures.push(`${sentTwice.length} commands sent more than once`);
  if (ids.length < s.expected) failures.push(`only ${ids.length} of ${s.expected} commands reached the command topic`);
  return {
    commandsIn: ids.length,
    records: [...s.recordsPerCommand.values()].reduce((a, b) => a + b, 0),
    resultsOut: ids.reduce((n, id) => n + count(id), 0),
    missing,
    duplicated,
    sentTwice,
    unknownResults: ids.filter((id) => (s.results.get(id) ?? []).some((r) => r.outcome === 'UNKNOWN')).length,
    order: orderViolations(s.orderByKey, s.sends),
    failures,
  };
}
