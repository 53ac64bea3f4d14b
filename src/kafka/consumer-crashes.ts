/**
 * How kafkajs 2.2.4's consumer crashes, made fit for the worker (installed by kafkajs.ts, with its
 * `require`, once kafkajs's consumer may load):
 *
 * - A rejoin that failed is tried again in place, a few times (JOIN_RETRY), when the failure is
 *   what a broker restarting or a coordinator moving looks like (coordinator-loss.ts,
 *   mayRetryJoin): kafkajs retries a join itself only while the group rebalances. Without it the
 *   consumer crashed (below), and a crash costs more than the wait: kafkajs sends LeaveGroup, so
 *   the process's partitions go to the other members (each fenced and recovered there) and come
 *   back when it joins again as a new member (fenced and recovered once more). Retried in place, the
 *   member stays in its group: the group waits for it (its session) and nothing moves. Its lanes
 *   hold meanwhile (onRejoinRetrying: kafkajs's REBALANCING comes before some rejoins only), and
 *   whether its claims are kept is decided at the join as always (group-membership.ts: a JoinGroup
 *   sent by a failed attempt already counts as a missed generation). A stop ends the tries at
 *   their next wait or attempt, with a final crash.
 * - A rejoin that failed for good crashes instead of fetching on in a generation the member has
 *   left. kafkajs's runner rejoins from inside its fetch loop's retrier (runner.js,
 *   scheduleFetchManager): when the join fails with a retriable error (the coordinator lookup or a
 *   connection refused while a broker restarts), the retrier runs the loop body again, which starts
 *   the fetchers without a join. Measured with a single broker restarted twice: the member, no
 *   longer in the group, fetched about 3,000 times a second, never heartbeated or rejoined, and
 *   logged nothing above debug; the worker looked ready and live and sent nothing
 *   (test/worker/broker-restart.int.test.ts). Made non-retriable, the failure ends the loop as a
 *   crash, and kafkajs restarts the consumer (a fresh member joining) when the failure's original
 *   cause is retriable, as it recovers from any other retriable crash. A failure that is
 *   non-retriable already (retries used up, or a coordinator lookup: below) is left as it is.
 * - A stop leaves the group first, then stops fetching (kafkajs leaves after its fetch loop has
 *   ended), so the process's partitions move without waiting for its last fetch.
 * - The runner's crash handler first tells the group's crash listeners (onConsumerCrashing), before
 *   kafkajs leaves the group, then shows kafkajs's own handler the crash as coordinator-loss.ts
 *   decides: a lookup no broker answered becomes a restartable error (a new one: the error kafkajs
 *   made stays as it is for the admin and the producers, which share it), a refused one a final
 *   error naming the refusal. The brokers' refusals are recorded from Broker.findGroupCoordinator.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { retry, RetryAborted, type RetryOptions } from '../retry.ts';
import { coordinatorKey, GROUP_COORDINATOR } from './coordinator-cache.ts';
import { BROKER_OUTAGE_LIMIT_MS, crashVerdict, errorChain, isBrokerUnreachable, LookupRefusals, mayRetryJoin } from './coordinator-loss.ts';

/**
 * A failed rejoin's tries in place before the consumer crashes: waits of 250 ms doubling to 2 s (at
 * least half of each), and no wait begun after JOIN_RETRY_WINDOW_MS from the rejoin's start. Only
 * failures that left the group as it was are tried again (mayRetryJoin: no broker answered the
 * coordinator lookup, the coordinator is loading, a connection refused), so the member keeps its
 * id and its place in the group. The window is the one a fetch loop waits for a broker
 * (BROKER_OUTAGE_LIMIT_MS, 5 min), not a few seconds: a broker that shuts down answers the
 * member's heartbeat "not the coordinator", so it rejoins while the broker is away, and with a
 * window of 8 s the rejoin of a broker down 8 s (and then seconds starting) ran out, crashed the
 * consumer, and the new member it came back as waited out the old one's whole session: sends
 * stopped until 30.7 s after the broker answered again (test/worker/broker-crash.int.test.ts). A
 * coordinator that restarts loads the group with every member and starts their sessions afresh,
 * so the member that kept its id rejoins in place once a broker answers. An attempt itself is
 * kafkajs's join and is not cut short (a coordinator lookup kafkajs retries itself can take tens of
 * seconds). The process's lanes hold meanwhile (onRejoinRetrying) and retire once the lease lapses
 * (source-pipeline.ts), handing over what they held, so a partition the group gives away meanwhile
 * (this member cut off alone) finds its handovers in time.
 */
export const JOIN_RETRY: Pick<RetryOptions, 'attempts' | 'backoff'> = {
  attempts: Number.POSITIVE_INFINITY,
  backoff: { initialMs: 250, maxMs: 2_000, jitter: 0.5 },
};
export const JOIN_RETRY_WINDOW_MS = BROKER_OUTAGE_LIMIT_MS;

interface CoordinatorQuery {
  readonly groupId: string;
  readonly coordinatorType?: number;
}
interface InternalBroker {
  findGroupCoordinator(query: CoordinatorQuery): Promise<unknown>;
}
interface InternalConsumerGroup {
  readonly groupId: string;
  /** Set by a JoinGroup that succeeded. */
  readonly generationId?: number;
  /** KAFKA_SESSION_TIMEOUT_MS: how long the group keeps a silent member. */
  readonly sessionTimeout?: number;
  readonly logger: { warn(message: string, extra?: Record<string, unknown>): void };
  joinAndSync(): Promise<void>;
  /** Set by a join, dropped by a leave; kafkajs heartbeats only while it is set. */
  memberId?: string | null;
  /** The group's coordinator, once found. */
  readonly coordinator?: { leaveGroup(request: { groupId: string; memberId: string }): Promise<unknown> };
}
interface InternalFetchManager {
  start(): Promise<void>;
}
interface InternalRunner {
  onCrash: (error: unknown) => unknown;
  readonly consumerGroup: InternalConsumerGroup & { readonly cluster: { refreshMetadata(): Promise<void> } };
  readonly fetchManager: InternalFetchManager;
  readonly running: boolean;
  start(): Promise<unknown>;
  stop(): Promise<unknown>;
}
interface KafkaJsErrors {
  readonly KafkaJSNonRetriableError: new (error: unknown, options: { cause: unknown }) => Error;
  readonly KafkaJSGroupCoordinatorNotFound: new (message: string) => Error & { retriable: boolean };
}

/** Brokers' refusals of coordinator lookups, kept until a broker answers the same key. */
const refusals = new LookupRefusals();

/** Listeners per consumer group of this process, each set dropped with its last listener. */
class GroupListeners {
  readonly #byGroup = new Map<string, Set<(error: unknown) => void>>();

  add(groupId: string, listener: (error: unknown) => void): () => void {
    let listeners = this.#byGroup.get(groupId);
    if (listeners === undefined) this.#byGroup.set(groupId, (listeners = new Set()));
    const own = listeners;
    own.add(listener);
    return () => {
      own.delete(listener);
      if (own.size === 0 && this.#byGroup.get(groupId) === own) this.#byGroup.delete(groupId);
    };
  }

  /** Tells every listener of `groupId`; one that throws keeps neither the others nor kafkajs from going on. */
  tell(groupId: string, error: unknown): void {
    for (const listener of [...(this.#byGroup.get(groupId) ?? [])]) {
      try {
        listener(error);
      } catch {
        // kafkajs must go on handling its join or crash.
      }
    }
  }
}

const crashing = new GroupListeners();
const rejoinRetrying = new GroupListeners();

/**
 * Calls `listener` when the consumer of `groupId` in this process crashes, before kafkajs leaves
 * the group and decides on a restart (its CRASH event comes only after both): from that moment the
 * process is out of its group, whatever follows. Returns the unsubscribe.
 */
export function onConsumerCrashing(groupId: string, listener: (error: unknown) => void): () => void {
  return crashing.add(groupId, listener);
}

/**
 * Calls `listener` when a failed rejoin of the consumer of `groupId` is about to be tried again in
 * place (once per rejoin, before its first wait). kafkajs reports REBALANCING before only one of
 * the ways it rejoins (a member it dropped, a fetch's leader gone and a first join come without),
 * so the process holds its lanes here: the group may go on without this member's answer meanwhile.
 * Returns the unsubscribe.
 */
export function onRejoinRetrying(groupId: string, listener: (error: unknown) => void): () => void {
  return rejoinRetrying.add(groupId, listener);
}

function patchable<T>(require: NodeJS.Require, path: string, method: string): { prototype: T } {
  const module = require(path) as { prototype: Record<string, unknown> };
  if (typeof module.prototype[method] !== 'function') throw new Error(`kafkajs: cannot patch ${path}'s ${method}`);
  return module as unknown as { prototype: T };
}

let installed = false;

export function installConsumerCrashHandling(require: NodeJS.Require): void {
  if (installed) return;
  installed = true;
  const errors = require('kafkajs/src/errors.js') as KafkaJsErrors;

  const broker = patchable<InternalBroker>(require, 'kafkajs/src/broker/index.js', 'findGroupCoordinator');
  const kafkajsLookup = broker.prototype.findGroupCoordinator;
  broker.prototype.findGroupCoordinator = async function findGroupCoordinator(this: InternalBroker, query: CoordinatorQuery): Promise<unknown> {
    const key = coordinatorKey(query.groupId, query.coordinatorType ?? GROUP_COORDINATOR);
    try {
      const answer = await kafkajsLookup.call(this, query);
      refusals.answered(key);
      return answer;
    } catch (error) {
      refusals.failed(key, error);
      throw error;
    }
  };

  const group = patchable<InternalConsumerGroup>(require, 'kafkajs/src/consumer/consumerGroup.js', 'joinAndSync');
  const kafkajsJoin = group.prototype.joinAndSync;
  group.prototype.joinAndSync = async function joinAndSync(this: InternalConsumerGroup): Promise<void> {
    const { signal } = stopping(this);
    const key = coordinatorKey(this.groupId, GROUP_COORDINATOR);
    const startedAt = Date.now();
    // Each attempt's generation before it: retryable reads it once the attempt failed.
    let generationBefore: number | undefined;
    try {
      await retry(
        () => {
          // A join asked for after the stop (kafkajs's stop and a fetch's recovery can cross) is not sent.
          if (signal.aborted) return Promise.reject(STOPPING);
          generationBefore = this.generationId;
          return kafkajsJoin.call(this);
        },
        {
          ...JOIN_RETRY,
          signal,
          // Not after a JoinGroup that succeeded (its SyncGroup failed): the group has a generation with
          // this member in it whose assignment it never heard, and may go on without it; a crash ends
          // the process's claims at once instead.
          retryable: (error) =>
            !signal.aborted &&
            this.generationId === generationBefore &&
            Date.now() - startedAt < JOIN_RETRY_WINDOW_MS &&
            mayRetryJoin(error, refusals.refusal(key)),
          onRetry: (error, retryNumber, delayMs) => {
            if (retryNumber === 1) rejoinRetrying.tell(this.groupId, error);
            this.logger.warn('rejoining the group failed; trying again in place', {
              groupId: this.groupId,
              error: error instanceof Error ? error.message : String(error),
              retry: retryNumber,
              delayMs,
            });
          },
        },
      );
    } catch (thrown) {
      const error = thrown instanceof RetryAborted ? thrown.cause : thrown;
      // Stopping: a final crash without a cause, or kafkajs would start the consumer again after its stop.
      if (signal.aborted)
        throw stopCrash(
          errors,
          error === STOPPING
            ? 'the consumer stopped before it rejoined its group'
            : `${error instanceof Error ? error.message : String(error)}; not tried again: the consumer is stopping`,
        );
      if ((error as { retriable?: unknown } | null)?.retriable === false) throw error;
      throw new errors.KafkaJSNonRetriableError(error, { cause: error });
    }
  };

  const runner = patchable<InternalRunner>(require, 'kafkajs/src/consumer/runner.js', 'start');
  const kafkajsStart = runner.prototype.start;
  const crashHandled = new WeakSet<InternalRunner>();
  runner.prototype.start = function start(this: InternalRunner): Promise<unknown> {
    if (!crashHandled.has(this)) {
      crashHandled.add(this);
      const kafkajsOnCrash = this.onCrash;
      const { groupId } = this.consumerGroup;
      this.onCrash = (error: unknown): unknown => {
        crashing.tell(groupId, error);
        return kafkajsOnCrash(crashAsDecided(errors, error, groupId));
      };
      waitForBrokers(this, errors);
    }
    return kafkajsStart.call(this);
  };
  const kafkajsStop = runner.prototype.stop;
  runner.prototype.stop = async function stop(this: InternalRunner): Promise<unknown> {
    // A rejoin retried in place (above) would hold the stop (kafkajs waits for its fetch loop) for seconds.
    stopping(this.consumerGroup).abort();
    // Leave first, then stop fetching: kafkajs leaves last, after its fetch loop has ended (up to a
    // fetch wait, 100 ms, later), and every partition of the process waits for the leave to move.
    // Measured in the rolling-update bench: the group heard of a SIGTERMed worker's leave 73–170 ms
    // (mean 103, 6 leaves) after its lanes had committed, 27–97 ms (mean 61, 9 leaves) leaving
    // first. Batches fetched meanwhile are not taken (the worker is wrapping up), and kafkajs's own
    // leave afterwards finds no member id and sends nothing.
    //
    // The member id is dropped before the LeaveGroup goes out, as kafkajs's own leave drops it after
    // the answer: a heartbeat sent between the two (the fetch loop still runs) was answered
    // UNKNOWN_MEMBER_ID, which kafkajs logs at error and answers by joining again (CI caught the
    // line). kafkajs heartbeats only with a member id, on the same connection as the LeaveGroup.
    const group = this.consumerGroup;
    const { groupId, memberId, coordinator } = group;
    if (this.running && typeof memberId === 'string' && memberId !== '' && coordinator !== undefined) {
      group.memberId = null;
      await coordinator.leaveGroup({ groupId, memberId }).catch(() => undefined);
    }
    return kafkajsStop.call(this);
  };
}

/** The longest a fetch loop without a broker awaits one metadata refresh before it tries again (kafkajs's own connect retries run on meanwhile). */
const REFRESH_WAIT_MS = 2_000;

/**
 * A fetch loop that cannot reach a broker waits for one, in place, before it crashes. kafkajs
 * takes a broker out of its pool when a fetch's connection closes under it; a single broker
 * killed, or every broker at once, empties the pool, and kafkajs's runner ended its fetch loop at
 * once with `No broker available`: a crash, so a LeaveGroup, every partition of the process moved
 * away and back (test/worker/broker-restart.int.test.ts: 2 of 3 kills). A fetch loop whose
 * metadata refresh, fetch or heartbeat met a connection refused, reset or closed (kafkajs's
 * retrier gives up on them within about 10 s) crashed the same way a little later. Here the loop
 * asks the seed brokers for metadata (which fills the pool again once one answers; one refresh at
 * a time, awaited up to REFRESH_WAIT_MS) and starts again (isBrokerUnreachable), with the waits of
 * a rejoin tried again in place (JOIN_RETRY's backoff), none begun after BROKER_OUTAGE_LIMIT_MS
 * (5 min) from the first failure; past that it crashes as before.
 *
 * Not the session timeout: a coordinator that restarts loads the group with every member and
 * starts their sessions afresh, so a member that kept its id heartbeats and fetches on once a
 * broker answers, while a member that crashed joins as a new one and the group waits a whole
 * session for the old one to expire (measured with the one broker SIGKILLed for 20 s: sends
 * stopped until 30.5 s after it answered again; test/worker/broker-crash.int.test.ts). A group
 * that did expire the member meanwhile (a network cut to this process alone) answers its next
 * heartbeat UNKNOWN_MEMBER_ID, and kafkajs joins again as a new member. A loop that ran before it
 * lost its brokers starts a new wait. No heartbeat goes out meanwhile, so the lease lapses as in
 * any outage and no call starts. A stop ends the wait: the loop then returns once kafkajs's runner
 * is no longer running. (Returning at once on a stop, a first version spun: a review found that a
 * runner whose stop came during its join runs on, and its fetch loop would have returned forever.)
 */
function waitForBrokers(runner: InternalRunner, errors: KafkaJsErrors): void {
  const { fetchManager, consumerGroup } = runner;
  const kafkajsFetchLoop = fetchManager.start.bind(fetchManager);
  let refreshing: Promise<void> | undefined;
  const refresh = async (signal: AbortSignal): Promise<void> => {
    refreshing ??= consumerGroup.cluster
      .refreshMetadata()
      .catch(() => undefined)
      .finally(() => (refreshing = undefined));
    await Promise.race([refreshing, sleep(REFRESH_WAIT_MS, undefined, { signal }).catch(() => undefined)]);
  };
  fetchManager.start = async (): Promise<void> => {
    const { signal } = stopping(consumerGroup);
    // Stopped while it joined (kafkajs's stop returns at once while the runner is not running yet),
    // then the join went through: end the runner rather than fetch after the stop.
    if (signal.aborted && runner.running) throw stopCrash(errors, 'the consumer stopped while it joined its group');
    let waitingSince: number | undefined;
    let loopStartedAt = 0;
    try {
      await retry(
        async (attempt) => {
          if (attempt > 1) await refresh(signal);
          loopStartedAt = Date.now();
          await kafkajsFetchLoop();
        },
        {
          attempts: Number.POSITIVE_INFINITY,
          backoff: JOIN_RETRY.backoff,
          signal,
          retryable: (error) => {
            if (!isBrokerUnreachable(error) || signal.aborted) return false;
            // kafkajs finds its pool empty as the loop starts; later, the loop found brokers and ran.
            if (waitingSince === undefined || Date.now() - loopStartedAt > 1_000) waitingSince = loopStartedAt;
            return Date.now() - waitingSince < BROKER_OUTAGE_LIMIT_MS;
          },
          onRetry: (error, retryNumber, delayMs) => {
            if (retryNumber === 1)
              consumerGroup.logger.warn('no broker to fetch from (their connections closed); waiting for one', {
                groupId: consumerGroup.groupId,
                delayMs,
                error: error instanceof Error ? error.message : String(error),
              });
          },
        },
      );
    } catch (thrown) {
      // Stopped during a wait, and kafkajs's runner with it: nothing more to fetch. Anything else is
      // kafkajs's to handle, as before.
      if (signal.aborted && !runner.running) return;
      throw thrown instanceof RetryAborted ? thrown.cause : thrown;
    }
  };
}

const STOPPING = new Error('the consumer is stopping');

/** The final crashes that a stop made of a rejoin tried again in place, or of a join it overtook. */
const stopCrashes = new WeakSet<object>();

/** A stop's final crash: no cause, so kafkajs does not start the consumer again; logged at info (isStopDuringRejoin). */
function stopCrash(errors: KafkaJsErrors, message: string): Error {
  const final = new errors.KafkaJSNonRetriableError(message, { cause: undefined });
  stopCrashes.add(final);
  return final;
}

/** Whether a consumer's crash is a stop ending its rejoin's tries (expected then, not an error). */
export function isStopDuringRejoin(error: unknown): boolean {
  // kafkajs's retrier may wrap it (its cause).
  return errorChain(error).some((e) => stopCrashes.has(e));
}

/** Each consumer group object's stop signal (kafkajs makes a new one for every run and restart). */
const stops = new WeakMap<InternalConsumerGroup, AbortController>();

function stopping(group: InternalConsumerGroup): AbortController {
  let stop = stops.get(group);
  if (stop === undefined) stops.set(group, (stop = new AbortController()));
  return stop;
}

function crashAsDecided(errors: KafkaJsErrors, error: unknown, groupId: string): unknown {
  const refusal = refusals.refusal(coordinatorKey(groupId, GROUP_COORDINATOR));
  const verdict = crashVerdict(error, refusal);
  if (verdict === 'as-is') return error;
  const message = error instanceof Error ? error.message : String(error);
  if (verdict === 'refused') {
    const reason = refusal instanceof Error ? refusal.message : String(refusal);
    return new errors.KafkaJSNonRetriableError(`${message}: a broker refused the lookup: ${reason}`, { cause: refusal });
  }
  // No cause: kafkajs decides on the restart by the original cause's `retriable`.
  const restartable = new errors.KafkaJSGroupCoordinatorNotFound(message);
  restartable.retriable = true;
  return restartable;
}
