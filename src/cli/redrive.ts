import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { deadLetterFromAvro, type DeadLetter } from '../contracts/dead-letter.ts';
import { createKafka } from '../kafka/client.ts';
import { kafkaRedriveIo, type RedriveIo } from '../kafka/redrive-io.ts';
import { checkBrokerCertificate } from '../kafka/tls-check.ts';
import { createLogger } from '../observability/logger.ts';
import { createRegistry, decodeCommandValue } from '../schema/codec.ts';
import { CliExit, connectionFrom, HELP_FLAG, parseCommandArgs } from './connection.ts';
import { ConfigError } from '../errors.ts';
import { parseTime, redriveRecord, REDRIVEN_FROM_HEADER, selected, unreplayable, type RedriveFilter, type RedriveRecord } from './redrive-plan.ts';

/** The most dead letters one run re-publishes unless --max says otherwise: a run is bounded, and says when more matched. */
export const DEFAULT_MAX_REDRIVE = 10_000;
/** Records re-published per produce request. */
const BATCH = 100;

export const REDRIVE_HELP = `sms-worker redrive — publish dead-lettered command records again (a dry run unless --execute)

Usage: sms-worker redrive [--execute] [--code C[,C…]] [--since T] [--until T] [--source-topic T]
                          [--source-partition N] [--from-offset N] [--to-offset N] [--max N]
                          [--to-topic T] [--dlq-topic T] [--brokers B] [--registry URL]
  --execute           publish; without it, print what would be published and why others would not
  --code C,…          only dead letters with these codes (NOT_CONFLUENT_FRAMING, UNKNOWN_SCHEMA_ID,
                      UNDECODABLE, RECORD_TOO_LARGE, …)
  --since T, --until T  dead-lettered at or after T / before T (ISO 8601, or epoch milliseconds)
  --source-topic T, --source-partition N, --from-offset N, --to-offset N
                      only records that came from there (offsets: from inclusive, to exclusive)
  --max N             stop after N re-published (default ${DEFAULT_MAX_REDRIVE}; the summary says how many more matched)
  --to-topic T        publish there instead of each record's source topic
  --dlq-topic T       the dead-letter topic (default DEAD_LETTER_TOPIC, sms.commands.dlq)
Each record goes back byte for byte (key, value, headers) with one more header,
${REDRIVEN_FROM_HEADER}: <dlq topic>/<partition>/<offset>. Before it is published its value is decoded with
the registry as the worker does; one that still does not decode is reported and not published (it
would only come back). Dead letters that left parts of the record out, and records dead-lettered for
their size, are reported and not published.
Idempotent through the worker's repeat window: a record published again with the same key lands on
the same partition, and the worker skips a commandId it answered within its last DEDUP_WINDOW
(2,000) records there; outside that window, or with a changed partition count or a null key, a
second run would send again. Kafka and registry settings as for produce and tail (KAFKA_*, SCHEMA_REGISTRY_*).
Exit codes: 0 done (or dry run) · 1 Kafka, the registry or a publish failed · 2 usage error`;

/** What became of the dead letters a run looked at. */
export interface RedriveSummary {
  readonly read: number;
  readonly selected: number;
  readonly published: number;
  /** Dry run: would be published. */
  readonly wouldPublish: number;
  /** Selected beyond --max: left for a next run. */
  readonly overMax: number;
  /** Selected, but the value still does not decode: by the decoder's code. */
  readonly stillUndecodable: Readonly<Record<string, number>>;
  readonly reduced: number;
  readonly tooLarge: number;
  /** Records of the dead-letter topic that are not dead letters (not decodable as one). */
  readonly unreadable: number;
}

export interface RedriveOptions {
  readonly execute: boolean;
  readonly dlqTopic: string;
  readonly toTopic: string | undefined;
  readonly filter: RedriveFilter;
  readonly max: number;
  /** One line per dead letter looked at (selected ones); the summary at the end. */
  readonly say: (line: string) => void;
  /** Dead-letter records read of those there are, replaced in place (a terminal's stderr), or none. */
  readonly progress?: ((read: number, total: number) => void) | undefined;
}

/**
 * Reads the dead-letter topic to its end as it is when the run starts, and re-publishes what the
 * filters select as it goes, a batch at a time: memory holds one fetch and one batch, however many
 * dead letters there are. `registry` decodes the dead letters and checks each command value as the
 * worker would.
 */
export async function redrive(io: RedriveIo, registry: SchemaRegistry, o: RedriveOptions): Promise<RedriveSummary> {
  const ranges = (await io.ranges(o.dlqTopic)).sort((a, b) => a.partition - b.partition);
  const total = ranges.reduce((sum, r) => sum + Number(r.high - r.low), 0);
  const counts = { read: 0, selected: 0, overMax: 0, reduced: 0, tooLarge: 0, unreadable: 0 };
  const stillUndecodable: Record<string, number> = {};
  let taken = 0;
  let published = 0;
  const batch: { topic: string; record: RedriveRecord }[] = [];
  const flush = async (): Promise<void> => {
    // One request per destination topic, in the dead-letter topic's order.
    const byTopic = new Map<string, RedriveRecord[]>();
    for (const { topic, record } of batch) byTopic.set(topic, [...(byTopic.get(topic) ?? []), record]);
    for (const [topic, records] of byTopic) await io.publish(topic, records);
    published += batch.length;
    batch.length = 0;
  };
  try {
    for (const { partition, low, high } of ranges) {
      await io.forEach(o.dlqTopic, partition, low, high, async (record) => {
        counts.read += 1;
        o.progress?.(counts.read, total);
        let letter: DeadLetter;
        try {
          letter = deadLetterFromAvro(await registry.decode(record.value ?? Buffer.alloc(0)));
        } catch {
          counts.unreadable += 1;
          o.say(`${o.dlqTopic}[${partition}]@${record.offset}: not a dead letter (does not decode as one); left alone`);
          return;
        }
        if (!selected(letter, o.filter)) return;
        counts.selected += 1;
        const where = `${o.dlqTopic}[${partition}]@${record.offset} (from ${letter.source.topic}[${letter.source.partition}]@${letter.source.offset}, ${letter.error.code})`;
        const why = unreplayable(letter);
        if (why !== undefined) {
          counts[why === 'reduced' ? 'reduced' : 'tooLarge'] += 1;
          o.say(
            `${where}: not published: ${why === 'reduced' ? `the dead letter left ${letter.omitted.map((p) => p.part).join(', ')} out` : 'it was dead-lettered for its size and would be again'}`,
          );
          return;
        }
        const decoded = await decodeCommandValue(registry, letter.value);
        if (!decoded.ok) {
          stillUndecodable[decoded.code] = (stillUndecodable[decoded.code] ?? 0) + 1;
          o.say(`${where}: not published: still does not decode (${decoded.code}: ${decoded.message})`);
          return;
        }
        if (taken >= o.max) {
          counts.overMax += 1;
          return;
        }
        taken += 1;
        const topic = o.toTopic ?? letter.source.topic;
        o.say(`${where}: ${o.execute ? 'publishing' : 'would publish'} to ${topic}`);
        if (!o.execute) return;
        batch.push({ topic, record: redriveRecord(letter, { topic: o.dlqTopic, partition, offset: record.offset }) });
        if (batch.length >= BATCH) await flush();
      });
    }
    if (batch.length > 0) await flush();
  } finally {
    await io.close();
  }
  return { ...counts, published, wouldPublish: o.execute ? 0 : taken, stillUndecodable };
}

/** The summary in a few lines. */
export function summaryLines(s: RedriveSummary, o: { execute: boolean; max: number }): string[] {
  const undecodable = Object.entries(s.stillUndecodable);
  return [
    `dead letters read: ${s.read}; selected by the filters: ${s.selected}`,
    o.execute ? `published: ${s.published}` : `would publish: ${s.wouldPublish} (a dry run: --execute publishes)`,
    ...(s.overMax > 0 ? [`not published, beyond --max ${o.max}: ${s.overMax} (run again for them)`] : []),
    ...(undecodable.length > 0 ? [`not published, still undecodable: ${undecodable.map(([code, n]) => `${code} ${n}`).join(', ')}`] : []),
    ...(s.reduced > 0 ? [`not published, parts left out of the dead letter: ${s.reduced}`] : []),
    ...(s.tooLarge > 0 ? [`not published, dead-lettered for their size: ${s.tooLarge}`] : []),
    ...(s.unreadable > 0 ? [`records of the topic that are not dead letters: ${s.unreadable}`] : []),
  ];
}

/** `sms-worker redrive`. */
export async function runRedrive(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs(
    {
      args: [...argv],
      options: {
        ...HELP_FLAG,
        execute: { type: 'boolean' },
        code: { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        'source-topic': { type: 'string' },
        'source-partition': { type: 'string' },
        'from-offset': { type: 'string' },
        'to-offset': { type: 'string' },
        max: { type: 'string' },
        'to-topic': { type: 'string' },
        'dlq-topic': { type: 'string' },
        brokers: { type: 'string' },
        registry: { type: 'string' },
      },
    },
    REDRIVE_HELP,
  );
  const v = parsed.values;
  const problems: string[] = [];
  const time = (name: 'since' | 'until'): number | undefined => {
    const text = v[name];
    if (text === undefined) return undefined;
    const ms = parseTime(text);
    if (ms === undefined) problems.push(`--${name}: not a date-time or epoch milliseconds: ${text.slice(0, 40)}`);
    return ms;
  };
  const integer = (name: 'source-partition' | 'max'): number | undefined => {
    const text = v[name];
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) problems.push(`--${name}: must be a whole number ≥ 0`);
    return n;
  };
  const offset = (name: 'from-offset' | 'to-offset'): bigint | undefined => {
    const text = v[name];
    if (text === undefined) return undefined;
    if (!/^\d{1,19}$/.test(text)) {
      problems.push(`--${name}: must be an offset (a whole number ≥ 0)`);
      return undefined;
    }
    return BigInt(text);
  };
  const filter: RedriveFilter = {
    codes:
      v.code === undefined
        ? undefined
        : new Set(
            v.code
              .split(',')
              .map((c) => c.trim())
              .filter((c) => c !== ''),
          ),
    since: time('since'),
    until: time('until'),
    sourceTopic: v['source-topic'],
    sourcePartition: integer('source-partition'),
    fromOffset: offset('from-offset'),
    toOffset: offset('to-offset'),
  };
  const max = integer('max') ?? DEFAULT_MAX_REDRIVE;
  if (problems.length > 0) {
    console.error(`${problems.join('\n')}\n\n${REDRIVE_HELP}`);
    return 2;
  }
  let connection;
  try {
    connection = connectionFrom({ brokers: v.brokers, registry: v.registry }, 'COMMAND_TOPIC');
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    throw new CliExit(2);
  }
  const dlqTopic = v['dlq-topic'] ?? process.env['DEAD_LETTER_TOPIC'] ?? 'sms.commands.dlq';
  const execute = v.execute === true;
  const kafka = createKafka(connection.kafka, createLogger('silent'), `${connection.kafka.clientId}-redrive`);
  const tty = process.stderr.isTTY === true;
  try {
    await checkBrokerCertificate(connection.kafka);
    const summary = await redrive(kafkaRedriveIo(kafka), createRegistry(connection.registry.url, connection.registry.auth), {
      execute,
      dlqTopic,
      toTopic: v['to-topic'],
      filter,
      max,
      say: (line) => console.log(line),
      progress: tty ? drawProgress() : undefined,
    });
    for (const line of summaryLines(summary, { execute, max })) console.log(line);
    return 0;
  } catch (error) {
    console.error(`redrive failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

/** Redraws the bar on stderr when it moves by a percent, and ends the line at the end. */
function drawProgress(): (read: number, total: number) => void {
  let drawn = -1;
  return (read, total) => {
    const percent = total === 0 ? 100 : Math.floor((100 * read) / total);
    if (percent === drawn && read !== total) return;
    drawn = percent;
    process.stderr.write(`\rredrive: ${progressBar(read, total)} dead letters read${read === total ? '\n' : ''}`);
  };
}

/** `[#####-----] 50/100` for a terminal. */
export function progressBar(done: number, total: number, width = 30): string {
  const filled = total === 0 ? width : Math.round((width * done) / total);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total}`;
}
