import type { Codec } from '../../schema/codec.ts';

/**
 * Schema resolution done before the process joins its group (issue 23, item 3), so its first
 * records do not wait for the registry. The registry client fetches and compiles a writer schema
 * on its first use of an id, and does not share a fetch in progress: a fresh worker's first
 * batches (one per partition, at once) each asked the registry for the command schema, and its
 * first results for the result schema, while records waited.
 *
 * Resolved here: the result and dead-letter schemas (registered at start-up, but registering does
 * not cache them for encoding) and the command topic's latest schema under its TopicNameStrategy
 * subject. A command written with an older id still resolves on first use, as before; a subject
 * nobody has registered yet (no producer so far) is no error.
 *
 * Not done, on purpose: opening connections to the messaging service. Its API
 * (docs/ and the spec's section 4) has only the two send operations, both charged; there is no
 * free endpoint to warm a keep-alive socket with, and an undocumented request could count as a
 * failed call on the account. The cost left: each of the first MAX_IN_FLIGHT concurrent calls opens
 * its socket (over TLS to the real service, one handshake each; on loopback, next to nothing).
 */
export interface WarmUpReport {
  /** The command subject's latest schema id, or undefined when the subject has none yet. */
  readonly commandSchemaId: number | undefined;
  /** Time spent, ms. */
  readonly ms: number;
}

export async function warmSchemas(codec: Codec, commandTopic: string, now: () => number = Date.now): Promise<WarmUpReport> {
  const started = now();
  const registry = codec.registry;
  const commandSchemaId = await registry.getLatestSchemaId(`${commandTopic}-value`).catch(() => undefined);
  await Promise.all([
    registry.getSchema(codec.resultSchemaId),
    registry.getSchema(codec.deadLetterSchemaId),
    ...(commandSchemaId === undefined ? [] : [registry.getSchema(commandSchemaId)]),
  ]);
  return { commandSchemaId, ms: now() - started };
}

/** Time each warm-up step took (ms), or why it failed (a warm-up step never fails the start). */
export type WarmStepReport = Record<string, number | string>;

/**
 * A claim's reads, walked once on partition 0 before the group is joined (issue 23, item 3): a
 * fresh process's first claims each paid for their clients' connections and metadata (the admin's
 * offsets and group-coordinator look-ups, the partition reader's connections to the command
 * topic's and the ledger's leaders) and for decoding the repeat window cold: a surge pod's first
 * ledger read took 270–300 ms and its repeat window 250 ms, while the commands of the partitions
 * it took waited. The steps run together; each is timed, and one that fails is reported, not
 * thrown: the claim does the same reads again and handles their errors.
 */
export async function warmSteps(steps: Record<string, () => Promise<unknown>>, now: () => number = Date.now): Promise<WarmStepReport> {
  const report: WarmStepReport = {};
  await Promise.all(
    Object.entries(steps).map(async ([name, step]) => {
      const started = now();
      try {
        await step();
        report[name] = now() - started;
      } catch (error) {
        report[name] = `failed: ${error instanceof Error ? error.message : String(error)}`;
      }
    }),
  );
  return report;
}
