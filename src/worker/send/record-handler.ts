import { commandFromAvro, CommandShapeError, type SendCommand } from '../../contracts/command.ts';
import { checkCommandRecordSize } from '../../contracts/dead-letter.ts';
import {
  expiredResult,
  failedResult,
  rejectedResult,
  RESULT_ERROR_CODES,
  sentResult,
  unknownResult,
  unusableCommandResult,
  type CommandResult,
  type ResultContext,
  type SourcePosition,
} from '../../contracts/result.ts';
import { encodedDeadLetter, encodedResult, publishesRecord, type CommandRecord, type RecordCodec, type RecordOutcome } from '../lane/record-outcomes.ts';
import { validateCommand, type Validation, type ValidationPolicy } from '../../contracts/validate.ts';
import type { GeoRefusal } from '../../contracts/geo.ts';
import { coerceError } from '../../errors.ts';
import { retry, RetryAborted } from '../../retry.ts';
import { isProviderError } from '../../provider/provider-error.ts';
import { RegistryUnavailableError } from '../../schema/codec.ts';
import type { SendHooks } from './guarded-sender.ts';
import type { CommandSender } from './failover-sender.ts';
import { tenantOf } from '../tenants/tenant-settings.ts';
import type { RoutedOutcome, SendOutcome } from './send-outcome.ts';
import type { Identity } from '../protocol/partition-machine.ts';
import type { InDoubtSettlement } from '../ownership/handover-lookout.ts';
import type { OpenMark } from '../lane/ledger-checkpoint.ts';
import { firstCallOnly, SendStageClock, timeToSendSeconds, type SendStage } from '../time-to-send.ts';
import { screenHolding } from '../guard/velocity-hold.ts';

export type { CommandRecord, RecordCodec, RecordOutcome } from '../lane/record-outcomes.ts';
import type { CommandEnd, CommandSpan, CommandTracer } from '../../observability/command-span.ts';
import { withLogTrace } from '../../observability/log-trace.ts';

export interface RecordHandlerDeps {
  readonly codec: RecordCodec;
  readonly sender: CommandSender;
  readonly policy: ValidationPolicy;
  /** What to do with a command an earlier owner marked as being sent, without a result or a handover within the grace. */
  readonly inDoubtPolicy: 'report' | 'resend';
  /** Encoded results above this are reduced (see shrinkResult) so the record always fits the topic. */
  readonly maxRecordBytes: number;
  /** Command records above this (key, value, headers) are dead-lettered without being decoded. */
  readonly maxCommandBytes: number;
  readonly now?: () => number;
  readonly onRegistryRetry?: (error: RegistryUnavailableError) => void;
  /** Makes each record's spans when tracing is on; undefined (the default) costs nothing. */
  readonly tracer?: CommandTracer | undefined;
  /** Seconds from the record's publication to the start of its first call to the service. */
  readonly timeToSend?: { observe(seconds: number): void };
  /** The same time split into its stages (time-to-send.ts: SEND_STAGES), once per command whose first call started. */
  readonly sendStages?: (stage: SendStage, seconds: number) => void;
  /**
   * Told of the recipients outside the geo permissions of each validated command, before anything
   * is sent (refused under GEO_MODE=enforce, sent anyway under monitor): counted and logged.
   */
  readonly onGeoRefusals?: (refusals: readonly GeoRefusal[], command: SendCommand, source: SourcePosition) => void;
  /** TENANT_METADATA_KEY: the metadata entry naming a command's tenant (its limits, its routing); undefined: no tenants. */
  readonly tenantKey?: string;
}

/** The partition's view of one record: its protocol's answer about the commandId, and the hooks of its send. */
export interface RecordLane {
  /** In doubt (an earlier owner's mark), a repeat of an earlier record, or new. */
  identify(offset: bigint, commandId: string): Identity;
  /**
   * What the earlier owner handed over for an in-doubt mark (ledger on, handovers.ts): the
   * record's result, withdrawn (never called), or undefined (nothing within the grace, or `signal`
   * aborted). Without it, an in-doubt command is reported UNKNOWN at once.
   */
  handoverOf?(mark: OpenMark, signal: AbortSignal): Promise<InDoubtSettlement | undefined>;
  /** The in-doubt mark was handed over as withdrawn: the record is handled as new from here. */
  handedOver?(offset: bigint): void;
  /** The protocol's hooks for the send of this record (ledger mark, slot, lease). */
  sendHooks(offset: bigint): SendHooks | undefined;
}

/**
 * Decode → (in doubt? duplicate?) → validate → send → result, for one record. Never throws for
 * anything about the record: undecodable bytes become a dead letter, a bad command a REJECTED
 * result, a send that surely did not happen a FAILED result, one that may have happened an
 * UNKNOWN result. Once the service may have been called, every path ends in exactly one result.
 */
export async function handleRecord(
  message: CommandRecord,
  source: SourcePosition,
  deps: RecordHandlerDeps,
  signal: AbortSignal,
  lane: RecordLane,
): Promise<RecordOutcome> {
  if (deps.tracer === undefined) return handle(message, source, deps, signal, lane, undefined);
  const span = deps.tracer.start(message.headers, source, message.value?.length);
  let outcome: RecordOutcome;
  try {
    // Every log line written while it is handled carries the command's trace_id and span_id.
    outcome = await withLogTrace(span.logTrace, () => handle(message, source, deps, signal, lane, span));
  } catch (error) {
    span.fail(coerceError(error));
    throw error;
  }
  span.end(spanEnd(outcome));
  return publishesRecord(outcome) ? { ...outcome, headers: span.headers() } : outcome;
}

/** How a record's span ends: FAILED and UNKNOWN results and dead letters are errors; REJECTED is the command's fault, not the worker's. */
function spanEnd(outcome: RecordOutcome): CommandEnd {
  switch (outcome.kind) {
    case 'result': {
      const { outcome: status, error } = outcome.result;
      return { outcome: status, code: error?.code, failed: status === 'FAILED' || status === 'UNKNOWN' };
    }
    case 'dead-letter':
      return { outcome: 'DEAD_LETTER', code: outcome.record.error.code, failed: true };
    case 'duplicate':
      return { outcome: 'DUPLICATE', failed: false };
    case 'abandoned':
      return { outcome: 'ABANDONED', failed: false };
  }
}

/** A command that passed validation (and the velocity limits): its request, footprint and the recipients left out. */
type Sendable = Extract<Validation, { kind: 'send' }>;

async function handle(
  message: CommandRecord,
  source: SourcePosition,
  deps: RecordHandlerDeps,
  signal: AbortSignal,
  lane: RecordLane,
  span: CommandSpan | undefined,
): Promise<RecordOutcome> {
  const now = deps.now ?? Date.now;
  const stages = deps.sendStages === undefined ? undefined : new SendStageClock(message.timestamp, now());
  const offset = BigInt(source.offset);
  const read = await readCommand(message, source, deps, signal);
  if (read.kind === 'outcome') return read.outcome;
  const { command } = read;

  span?.identify(command.commandId, command.operation.kind);
  const identity = lane.identify(offset, command.commandId);
  if (identity.kind === 'in-doubt') {
    const settled = await settleInDoubt(identity.mark, command, source, deps, signal, lane);
    if (settled !== undefined) return settled;
    // Withdrawn (the earlier owner never called it, and never will), or resent: handled as new.
    lane.handedOver?.(offset);
  }
  if (identity.kind === 'duplicate') return { kind: 'duplicate', commandId: command.commandId, firstOffset: identity.firstOffset };

  // The command's tenant (TENANT_METADATA_KEY): its velocity limits here, its other limits and routing at the send.
  const tenant = deps.tenantKey === undefined ? undefined : tenantOf(command.metadata, deps.tenantKey);
  const admitted = await admit(command, source, tenant, deps, signal);
  if (admitted.kind === 'outcome') return admitted.outcome;
  return sendAndRecord(message, command, source, tenant, admitted.send, deps, signal, lane.sendHooks(offset), span, stages);
}

/** A step of handling that ends the record with this outcome (the later steps do not run). */
interface Ended {
  readonly kind: 'outcome';
  readonly outcome: RecordOutcome;
}

async function ended(outcome: RecordOutcome | Promise<RecordOutcome>): Promise<Ended> {
  return { kind: 'outcome', outcome: await outcome };
}

/** The record's command, or the outcome it ends with instead: a dead letter (too large, undecodable, not a command) or a REJECTED result (unusable). */
async function readCommand(
  message: CommandRecord,
  source: SourcePosition,
  deps: RecordHandlerDeps,
  signal: AbortSignal,
): Promise<{ readonly kind: 'command'; readonly command: SendCommand } | Ended> {
  const now = deps.now ?? Date.now;
  const size = checkCommandRecordSize(message, deps.maxCommandBytes);
  if (!size.ok) return ended(encodedDeadLetter(message, source, { code: size.code, message: size.message }, deps, now()));
  const decoded = await decodeWithRetry(message.value, deps, signal);
  if (decoded === 'abandoned') return ended({ kind: 'abandoned' });
  if (!decoded.ok) return ended(encodedDeadLetter(message, source, { code: decoded.code, message: decoded.message }, deps, now()));
  try {
    return { kind: 'command', command: commandFromAvro(decoded.value) };
  } catch (error) {
    if (!(error instanceof CommandShapeError)) throw error;
    // A REJECTED result needs a key: the commandId if it could be read, else the record key.
    const commandId = error.commandId ?? message.key?.toString('utf8');
    if (commandId === undefined || commandId === '') {
      return ended(encodedDeadLetter(message, source, { code: 'NOT_A_COMMAND', message: error.message }, deps, now()));
    }
    return ended(encodedResult(unusableCommandResult({ error, commandId, source, completedAt: now() }), deps));
  }
}

/**
 * An earlier owner's mark of this command: it may still be finishing that call, and hands over
 * its result (or says it never called): wait for it, within the grace, rather than report UNKNOWN
 * at once. The outcome, or undefined when the command is to be handled as new (withdrawn, or
 * IN_DOUBT_POLICY=resend with nothing handed over by the grace).
 */
async function settleInDoubt(
  mark: OpenMark,
  command: SendCommand,
  source: SourcePosition,
  deps: RecordHandlerDeps,
  signal: AbortSignal,
  lane: RecordLane,
): Promise<RecordOutcome | undefined> {
  const now = deps.now ?? Date.now;
  const settlement = await lane.handoverOf?.(mark, signal);
  if (settlement === undefined && signal.aborted) return { kind: 'abandoned' };
  // (The handover names this record's mark; a result of another command would be a bug: UNKNOWN then.)
  if (settlement?.kind === 'result' && settlement.result.commandId === command.commandId) return encodedResult(settlement.result, deps);
  // Its result is in the result topic already (result-search.ts): committed, nothing published again.
  if (settlement?.kind === 'published') return { kind: 'duplicate', commandId: command.commandId, firstOffset: BigInt(source.offset), published: true };
  // IN_DOUBT_POLICY=resend: no handover by the grace, the command is sent again (a duplicate is
  // that policy's accepted cost); a result of another command still ends UNKNOWN.
  const resend = settlement === undefined && deps.inDoubtPolicy === 'resend';
  if (settlement?.kind === 'withdrawn' || resend) return undefined;
  const attemptedAt = new Date(mark.at).toISOString();
  const through = mark.account === undefined ? '' : ` through account ${mark.account}`;
  const unknown = unknownResult(
    { command, source, completedAt: now() },
    {
      message: `an earlier owner of this partition marked the command as being sent${through} at ${attemptedAt} and stopped before its result was committed; the service may have sent it, so it is not sent again`,
      stage: 'OTHER',
      attempts: 0,
      attemptedAt: mark.at,
    },
  );
  // The mark names the account its call went through (ledger-checkpoint.ts): where it may have been sent.
  return encodedResult(mark.account === undefined ? unknown : { ...unknown, account: mark.account }, deps);
}

/**
 * Validation, then the velocity limits per destination (off unless VELOCITY_* is set), then those
 * of the command's tenant (TENANT_LIMITS): all before any money is spent.
 */
async function admit(
  command: SendCommand,
  source: SourcePosition,
  tenant: string | undefined,
  deps: RecordHandlerDeps,
  signal: AbortSignal,
): Promise<{ readonly kind: 'send'; readonly send: Sendable } | Ended> {
  const now = deps.now ?? Date.now;
  const validation = validateCommand(command, deps.policy, now());
  if (validation.kind === 'expired') return ended(encodedResult(expiredResult({ command, source, completedAt: now() }, validation.expiresAt), deps));
  if (validation.geoRefusals !== undefined) deps.onGeoRefusals?.(validation.geoRefusals, command, source);
  if (validation.kind === 'rejected')
    return ended(encodedResult(rejectedResult({ command, source, completedAt: now() }, validation.problems, validation.code), deps));
  const guards = [deps.sender.destinations, deps.sender.tenantDestinations?.(tenant)].filter((g) => g !== undefined);
  if (guards.length === 0) return { kind: 'send', send: validation };
  const verdict = await screenHolding(guards, validation, deps.policy.partialRecipients, command, source, signal, now);
  if (verdict.kind === 'abandoned') return ended({ kind: 'abandoned' });
  if (verdict.kind === 'expired') return ended(encodedResult(expiredResult({ command, source, completedAt: now() }, verdict.expiresAt), deps));
  if (verdict.kind === 'rejected')
    return ended(encodedResult(rejectedResult({ command, source, completedAt: now() }, verdict.problems, RESULT_ERROR_CODES.destinationVelocityLimited), deps));
  const send: Sendable = verdict.validation;
  return { kind: 'send', send };
}

/** The call through the guarded sender (its mark first, ledger on), and its outcome as a result; a result that cannot be recorded is UNKNOWN. */
async function sendAndRecord(
  message: CommandRecord,
  command: SendCommand,
  source: SourcePosition,
  tenant: string | undefined,
  send: Sendable,
  deps: RecordHandlerDeps,
  signal: AbortSignal,
  ledger: ReturnType<RecordLane['sendHooks']>,
  span: CommandSpan | undefined,
  stages: SendStageClock | undefined,
): Promise<RecordOutcome> {
  const now = deps.now ?? Date.now;
  let attemptedAt: number | null = null;
  const before = ledger?.beforeSend;
  const hooks: SendHooks = {
    ...(before !== undefined && {
      beforeSend: async (s: AbortSignal, account?: string) => {
        stages?.marking(now());
        const go = await before(s, account);
        if (go) attemptedAt ??= now();
        return go;
      },
    }),
    ...(ledger?.kept !== undefined && { kept: ledger.kept }),
    ...(span !== undefined && { onAttempt: span.onAttempt }),
    ...((deps.timeToSend !== undefined || stages !== undefined) && {
      callStarting: firstCallOnly(() => {
        const at = now();
        const seconds = timeToSendSeconds(message.timestamp, at);
        if (seconds !== undefined) deps.timeToSend?.observe(seconds);
        const split = stages?.calling(at);
        if (split !== undefined) for (const [stage, value] of Object.entries(split) as [SendStage, number][]) deps.sendStages?.(stage, value);
      }),
    }),
  };
  stages?.admitting(now());
  const outcome: RoutedOutcome = await deps.sender.send(send.request, command.commandId, signal, command.expiresAt, hooks, send.footprint, tenant);
  if (outcome.kind === 'abandoned') return { kind: 'abandoned', maybeSent: outcome.maybeSent === true };
  const ctx: ResultContext = { command, source, completedAt: now() };
  try {
    return await encodedResult(withAccount(resultOfSend(ctx, outcome, send.rejectedRecipients, attemptedAt ?? now()), outcome), deps);
  } catch (error) {
    // The service may have been called: whatever went wrong after it (an answer that does not fit
    // the result, an encoding error), the command gets one result and is never sent again.
    const cause = coerceError(error);
    return encodedResult(
      unknownResult(ctx, {
        message: `the send's outcome could not be recorded (${cause.message.slice(0, 300)}); the service may have sent it`,
        stage: 'OTHER',
        attempts: outcome.attempts,
        attemptedAt,
      }),
      deps,
    );
  }
}

/** The account that sent the command (or whose answer or pause ended it) and each one it left on the way. */
function withAccount(result: CommandResult, outcome: RoutedOutcome): CommandResult {
  const failovers = outcome.failovers ?? [];
  const account = outcome.kind === 'sent' || outcome.kind === 'failed' ? outcome.account : undefined;
  if (account === undefined && failovers.length === 0) return result;
  return { ...result, ...(account === undefined ? {} : { account }), ...(failovers.length === 0 ? {} : { failovers }) };
}

function resultOfSend(
  ctx: ResultContext,
  outcome: Exclude<SendOutcome, { kind: 'abandoned' }>,
  rejected: Parameters<typeof sentResult>[2],
  attemptedAt: number,
): CommandResult {
  switch (outcome.kind) {
    case 'expired':
      return expiredResult(ctx, outcome.expiresAt);
    case 'sent':
      return sentResult(ctx, { ...outcome.success, attempts: outcome.attempts }, rejected);
    case 'failed': {
      const error = outcome.error;
      if (!isProviderError(error)) {
        // Not understood (a bug): the call may have been made, so it is not reported as surely unsent.
        return unknownResult(ctx, { code: 'INTERNAL_ERROR', message: error.message, stage: 'OTHER', attempts: outcome.attempts, attemptedAt });
      }
      // The service answered (an HTTP status): its stage is PROVIDER even for a 5xx.
      const stage = error.answered ? 'PROVIDER' : 'TRANSPORT';
      if (error.ambiguous) {
        return unknownResult(ctx, {
          code: error.code,
          message: `${error.message}; the service may have sent it, so it is not sent again`,
          stage,
          attempts: outcome.attempts,
          attemptedAt,
          requestId: error.requestId,
        });
      }
      return failedResult(ctx, {
        code: error.code,
        message: error.message,
        stage,
        retryable: error.retryable,
        attempts: outcome.attempts,
        requestId: error.requestId,
      });
    }
  }
}

/** Waits between registry lookups while it is unreachable: half jitter, so no loop spins. */
const REGISTRY_BACKOFF = { initialMs: 250, maxMs: 10_000, jitter: 0.5 } as const;

/** A registry outage is not the record's fault: wait and ask again rather than dead-letter it. */
async function decodeWithRetry(
  value: Buffer | null,
  deps: RecordHandlerDeps,
  signal: AbortSignal,
): Promise<Awaited<ReturnType<RecordCodec['decode']>> | 'abandoned'> {
  try {
    return await retry(() => deps.codec.decode(value), {
      attempts: Infinity,
      backoff: REGISTRY_BACKOFF,
      retryable: (error) => error instanceof RegistryUnavailableError,
      onRetry: (error) => deps.onRegistryRetry?.(error as RegistryUnavailableError),
      signal,
    });
  } catch (error) {
    if (error instanceof RetryAborted) return 'abandoned';
    throw error;
  }
}
