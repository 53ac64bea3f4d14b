import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { AVRO_PARSE_OPTIONS, deadLetterSchema, resultSchema } from '../contracts/avro.ts';
import { DEAD_LETTER_CODES } from '../contracts/dead-letter.ts';
import { SmsWorkerError } from '../errors.ts';
import { retry } from '../retry.ts';

/** Why a record cannot be decoded at all: it goes to the dead-letter topic. */
export interface Undecodable {
  readonly ok: false;
  readonly code: string;
  readonly message: string;
}

/** The registry could not be asked (down, 5xx, timeout): not the record's fault, so retry. */
export class RegistryUnavailableError extends SmsWorkerError {
  constructor(message: string) {
    super('SCHEMA_REGISTRY_UNAVAILABLE', message, { retryable: true });
  }
}

interface StatusError {
  readonly status?: unknown;
}

export function createRegistry(url: string, auth?: { username: string; password: string }, requestTimeoutMs = REGISTRY_REQUEST_TIMEOUT_MS): SchemaRegistry {
  return new SchemaRegistry(
    { host: url, ...(auth !== undefined && { auth }), clientId: 'sms-worker', middlewares: [requestTimeout(requestTimeoutMs)] },
    { [SchemaType.AVRO]: { ...AVRO_PARSE_OPTIONS } },
  );
}

/**
 * How long one request to the schema registry may take. The registry client sets no timeout of
 * its own, so a registry that accepts a connection and never answers held whatever asked: the
 * worker's start (registering the result schemas, before any log line says so), or a record's
 * first decoding with a new schema id. Past it the request fails like an unreachable registry:
 * the start tries again (REGISTRY_RETRY) and then fails with the registry named, a record's
 * decoding is retried.
 */
export const REGISTRY_REQUEST_TIMEOUT_MS = 10_000;

type RegistryMiddleware = NonNullable<ConstructorParameters<typeof SchemaRegistry>[0]['middlewares']>[number];

/** Gives every registry request `timeoutMs` unless it carries a timeout of its own (mappersmith's request timeout). */
function requestTimeout(timeoutMs: number): RegistryMiddleware {
  return () => ({
    async prepareRequest(next) {
      const request = await next();
      return request.timeout() !== undefined ? request : request.enhance({ timeout: timeoutMs });
    },
  });
}

/**
 * Registers a schema; replicas of one Deployment start together and race to set the subject's
 * compatibility rule, and Apicurio answers the loser 409 ("A rule named 'COMPATIBILITY' already
 * exists"), or a replica reads the subject between another's registration and its rule ("BACKWARD
 * != NONE"). The rule is there a moment later, so registering again succeeds; a rule an operator
 * set differently still fails after the attempts.
 */
export async function registerRacing(registry: SchemaRegistry, schema: string, subject: string, attempts = 5): Promise<{ id: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await registry.register({ type: SchemaType.AVRO, schema }, { subject });
    } catch (error) {
      // 409: another replica set the rule first. A compatibility mismatch: another replica
      // registered the subject and has not set its rule yet (the registry reports its default).
      const racing = (error as StatusError).status === 409 || (error instanceof Error && error.name === 'ConfluentSchemaRegistryCompatibilityError');
      if (!racing || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.floor(Math.random() * 50)));
    }
  }
}

/**
 * Registry calls that ride out a registry briefly away or slow: the worker's start (registering the
 * result and dead-letter schemas, resolving the schemas before the group is joined),
 * `sms-worker produce`'s registration of the command schema, and the result reader's look-ups of
 * writer schemas. A registry restarting, or one request past REGISTRY_REQUEST_TIMEOUT_MS on a loaded
 * machine (CI saw a start fail on one), is not a reason to fail: the registry client retries a 5xx
 * or a refused connection three times itself, but never a timeout. Bounded: 4 attempts, about 7 s
 * of waits, then the last error. Only a registry that did not answer is asked again
 * (isRegistryUnavailable): an answer (a credential refused, a compatibility rule set otherwise, a
 * schema refused) fails at once, as before.
 */
export const REGISTRY_RETRY = { attempts: 4, backoff: { initialMs: 1_000, maxMs: 4_000, jitter: 0.5 } } as const;

/**
 * The registry did not answer: a 5xx (after the client's own retries), 408 or 429, or a failure of
 * the request itself. mappersmith reports those (a timeout, a refused or reset connection) as
 * status 400 with the error as the body, which the client's ResponseError words "Error, status
 * 400: <error>"; a 400 the registry answered carries the registry's message instead.
 */
export function isRegistryUnavailable(error: unknown): boolean {
  const status = (error as StatusError | null)?.status;
  if (typeof status !== 'number') return false;
  if (status >= 500 || status === 408 || status === 429) return true;
  return status === 400 && error instanceof Error && error.message.includes('Error, status 400: ');
}

/**
 * Runs registry work under REGISTRY_RETRY. `signal` (a stop while starting, a reader stopping)
 * ends the waits, and an attempt is not begun once it aborted; `retryable` narrows what is asked
 * again (never widens it past isRegistryUnavailable).
 */
export function withRegistryRetry<T>(
  work: () => Promise<T>,
  options: {
    onRetry?: (error: unknown, retryNumber: number, delayMs: number) => void;
    signal?: AbortSignal;
    random?: () => number;
    retryable?: (error: unknown) => boolean;
  } = {},
): Promise<T> {
  const { retryable, signal, ...rest } = options;
  return retry(
    async () => {
      signal?.throwIfAborted();
      return work();
    },
    { ...REGISTRY_RETRY, ...rest, ...(signal !== undefined && { signal }), retryable: (error) => isRegistryUnavailable(error) && (retryable?.(error) ?? true) },
  );
}

/**
 * Confluent-framed Avro in and out. Writer schemas are cached by id inside the registry client;
 * the ids of the schemas this worker writes are resolved once, at start-up.
 */
export class Codec {
  readonly registry: SchemaRegistry;
  readonly resultSchemaId: number;
  readonly deadLetterSchemaId: number;

  private constructor(registry: SchemaRegistry, resultSchemaId: number, deadLetterSchemaId: number) {
    this.registry = registry;
    this.resultSchemaId = resultSchemaId;
    this.deadLetterSchemaId = deadLetterSchemaId;
  }

  /** Registers (idempotently) the result and dead-letter schemas under TopicNameStrategy subjects. */
  static async create(registry: SchemaRegistry, topics: { results: string; deadLetter: string }): Promise<Codec> {
    const [result, deadLetter] = await Promise.all([
      registerRacing(registry, JSON.stringify(resultSchema), `${topics.results}-value`),
      registerRacing(registry, JSON.stringify(deadLetterSchema), `${topics.deadLetter}-value`),
    ]);
    return new Codec(registry, result.id, deadLetter.id);
  }

  /**
   * Decodes a command record's value. Returns the decoded Avro value, or why the bytes are not a
   * record this worker can read. Throws RegistryUnavailableError when the answer depends on a
   * registry that cannot be reached.
   */
  decode(value: Buffer | null): Promise<{ ok: true; value: unknown; schemaId: number } | Undecodable> {
    return decodeCommandValue(this.registry, value);
  }

  encodeResult(value: Record<string, unknown>): Promise<Buffer> {
    return this.registry.encode(this.resultSchemaId, value);
  }

  encodeDeadLetter(value: Record<string, unknown>): Promise<Buffer> {
    return this.registry.encode(this.deadLetterSchemaId, value);
  }
}

/**
 * A command record's value decoded as the worker decodes it (Confluent framing, the writer schema
 * by id from the registry, Avro): the value, or why the bytes are not a record the worker can read
 * (a dead letter's code and message). Throws RegistryUnavailableError when the answer depends on a
 * registry that cannot be reached. Shared by the worker's Codec and `sms-worker redrive`.
 */
export async function decodeCommandValue(
  registry: SchemaRegistry,
  value: Buffer | null,
): Promise<{ ok: true; value: unknown; schemaId: number } | Undecodable> {
  if (value === null || value.length < 5 || value[0] !== 0) {
    return {
      ok: false,
      code: DEAD_LETTER_CODES.notConfluentFraming,
      message:
        value === null
          ? 'record has no value (tombstone)'
          : value.length < 5
            ? `value is ${value.length} bytes, shorter than the 5-byte Confluent header`
            : `first byte is ${value[0]}, not the Confluent magic byte 0`,
    };
  }
  const schemaId = value.readInt32BE(1);
  let type;
  try {
    type = await registry.getSchema(schemaId);
  } catch (error) {
    const status = (error as StatusError).status;
    if (status === 404) return { ok: false, code: DEAD_LETTER_CODES.unknownSchemaId, message: `schema id ${schemaId} is not in the registry` };
    throw new RegistryUnavailableError(`schema registry lookup of id ${schemaId} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    const decoded = await registry.decode(value);
    return { ok: true, value: decoded, schemaId };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      code: DEAD_LETTER_CODES.undecodable,
      message: `bytes do not decode with schema id ${schemaId} (${type === undefined ? 'unknown type' : 'Avro'}): ${reason}`,
    };
  }
}
