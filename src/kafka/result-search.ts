/**
 * Finds results already published for commands a new owner inherited in doubt.
 *
 * A transaction writes a batch's results and its ledger checkpoint together; Kafka 4.3.1 can end
 * such a transaction in a broker's restart with its marker to the ledger partition lost
 * (docs/operations.md) while the result partitions got theirs. The next owner then reads the
 * ledger as if the results never came (their marks in doubt, no handover: the earlier owner did
 * not know the commit's fate either) and reported each command UNKNOWN beside its SENT
 * (test/worker/broker-crash.int.test.ts, the broker SIGKILLed under load). Before an in-doubt
 * command is reported UNKNOWN, the result topic is read from just before its mark for a result of
 * that record: the command's key, and the result's source naming that very record.
 *
 * Bounded: at most `maxRecords` result records read in one search and `deadlineMs` in all; one
 * fetch in memory at a time. Past either, the search fails (RESULT_SEARCH_TOO_LONG): the caller
 * goes on as without it (a mark in doubt is reported UNKNOWN, or takes its handover; a record
 * answered without a call is handled again).
 */
import { SmsWorkerError } from '../errors.ts';
import type { PartitionReader } from './partition-reader.ts';

/** A record of the command topic: where a result says its command came from. */
export interface SearchedSource {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/** One in-doubt record: its command's id (the result's key) and where it is. */
export interface SearchedCommand {
  readonly commandId: string;
  readonly source: SearchedSource;
}

export interface ResultSearchDeps {
  /** Every partition of the topic, with the first offset written at or after `timestamp` (or its end). */
  readonly admin: { fetchTopicOffsetsByTimestamp(topic: string, timestamp?: number): Promise<{ partition: number; offset: string }[]> };
  readonly reader: Pick<PartitionReader, 'forEach' | 'ends'>;
  /** The source a result record names, or undefined when its value cannot be read. */
  readonly sourceOf: (value: Buffer) => Promise<SearchedSource | undefined>;
}

/** Result records one search reads at most (all partitions together): about 10 minutes of 800 results a second. */
export const RESULT_SEARCH_MAX_RECORDS = 500_000;
/** How long one search may take in all, reads and waits for open transactions included. */
export const RESULT_SEARCH_DEADLINE_MS = 15_000;

export interface ResultSearchLimits {
  readonly maxRecords?: number;
  readonly deadlineMs?: number;
}

const sameSource = (a: SearchedSource, b: SearchedSource): boolean => a.topic === b.topic && a.partition === b.partition && a.offset === b.offset;

/**
 * A commandId longer than this may not be a result's key as the ledger has it: the ledger keeps
 * its first 256 UTF-16 units, a result its first 127, `…` and a digest (resultCommandId). Such a one
 * is matched by its first PREFIX_UNITS units, then by the result's source, as every match is.
 */
const LONG_ID_UNITS = 128;
const PREFIX_UNITS = 100;

/**
 * Which of `commands` have a result in `resultTopic` that a read_committed reader sees, written at
 * or after `since` (epoch ms): their indexes in `commands`. Reads every partition from the first
 * offset written at `since` up to its end when the search began; a transaction open there is
 * waited for (within the deadline), as its results may be one of these.
 */
export async function publishedResults(
  deps: ResultSearchDeps,
  resultTopic: string,
  commands: readonly SearchedCommand[],
  since: number,
  limits: ResultSearchLimits = {},
): Promise<Set<number>> {
  const found = new Set<number>();
  if (commands.length === 0) return found;
  const maxRecords = limits.maxRecords ?? RESULT_SEARCH_MAX_RECORDS;
  const deadline = Date.now() + (limits.deadlineMs ?? RESULT_SEARCH_DEADLINE_MS);
  const byId = new Map<string, number[]>();
  const byPrefix: { readonly prefix: string; readonly i: number }[] = [];
  for (const [i, command] of commands.entries()) {
    if (command.commandId.length > LONG_ID_UNITS) byPrefix.push({ prefix: command.commandId.slice(0, PREFIX_UNITS), i });
    else byId.set(command.commandId, [...(byId.get(command.commandId) ?? []), i]);
  }
  const candidatesOf = (key: string): number[] => [...(byId.get(key) ?? []), ...byPrefix.filter((p) => key.startsWith(p.prefix)).map((p) => p.i)];
  const starts = await deps.admin.fetchTopicOffsetsByTimestamp(resultTopic, since);
  // Each partition up to its high watermark now (what is written, open transactions included: the
  // admin's end offsets are read_committed ones, which stop below an open transaction).
  const ends = await Promise.all(
    starts.map(async ({ partition, offset }) => ({
      partition,
      from: BigInt(offset),
      to: (await deps.reader.ends(resultTopic, partition, BigInt(offset))).high,
    })),
  );
  let read = 0;
  for (const { partition, from, to } of ends) {
    if (from >= to) continue;
    const left = deadline - Date.now();
    if (left <= 0) throw tooLong(resultTopic, `its ${limits.deadlineMs ?? RESULT_SEARCH_DEADLINE_MS} ms`);
    await deps.reader.forEach(
      resultTopic,
      partition,
      from,
      to,
      async (record) => {
        if (++read > maxRecords) throw tooLong(resultTopic, `${maxRecords} records`);
        const candidates = record.key === null ? [] : candidatesOf(record.key.toString('utf8'));
        if (candidates.length === 0 || record.value === null) return;
        const source = await deps.sourceOf(record.value);
        if (source === undefined) return;
        for (const i of candidates) {
          const command = commands[i];
          if (command !== undefined && sameSource(command.source, source)) found.add(i);
        }
      },
      left,
    );
    if (found.size === commands.length) break;
  }
  return found;
}

function tooLong(topic: string, limit: string): SmsWorkerError {
  return new SmsWorkerError('RESULT_SEARCH_TOO_LONG', `searching ${topic} for results of commands in doubt went past ${limit}`);
}
