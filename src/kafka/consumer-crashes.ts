/**
 * How kafkajs 2.2.4's consumer crashes, made fit for the worker (installed by kafkajs.ts, with its
 * `require`, once kafkajs's consumer may load):
 *
 * - A rejoin that failed crashes instead of fetching on in a generation the member has left.
 *   kafkajs's runner rejoins from inside its fetch loop's retrier (runner.js,
 *   scheduleFetchManager): when the join fails with a retriable error (the coordinator lookup or a
 *   connection refused while a broker restarts), the retrier runs the loop body again, which starts
 *   the fetchers without a join. Measured with a single broker restarted twice: the member, no
 *   longer in the group, fetched about 3,000 times a second, never heartbeated or rejoined, and
 *   logged nothing above debug; the worker looked ready and live and sent nothing
 *   (test/worker/broker-restart.int.test.ts). Made non-retriable, the failure ends the loop as a
 *   crash, and kafkajs restarts the consumer (a fresh member joining) when the failure's original
 *   cause is retriable, as it recovers from any other retriable crash. A failure that is
 *   non-retriable already (retries used up, or a coordinator lookup: below) is left as it is.
 * - The runner's crash handler first tells the group's crash listeners (onConsumerCrashing), before
 *   kafkajs leaves the group, then shows kafkajs's own handler the crash as coordinator-loss.ts
 *   decides: a lookup no broker answered becomes a restartable error (a new one: the error kafkajs
 *   made stays as it is for the admin and the producers, which share it), a refused one a final
 *   error naming the refusal. The brokers' refusals are recorded from Broker.findGroupCoordinator.
 */
import { coordinatorKey, GROUP_COORDINATOR } from './coordinator-cache.ts';
import { crashVerdict, LookupRefusals } from './coordinator-loss.ts';

interface CoordinatorQuery {
  readonly groupId: string;
  readonly coordinatorType?: number;
}
interface InternalBroker {
  findGroupCoordinator(query: CoordinatorQuery): Promise<unknown>;
}
interface InternalConsumerGroup {
  joinAndSync(): Promise<void>;
}
interface InternalRunner {
  onCrash: (error: unknown) => unknown;
  readonly consumerGroup: { readonly groupId: string };
  start(): Promise<unknown>;
}
interface KafkaJsErrors {
  readonly KafkaJSNonRetriableError: new (error: unknown, options: { cause: unknown }) => Error;
  readonly KafkaJSGroupCoordinatorNotFound: new (message: string) => Error & { retriable: boolean };
}

/** Brokers' refusals of coordinator lookups, kept until a broker answers the same key. */
const refusals = new LookupRefusals();

/** Listeners of each consumer group told of a crash of its consumer before kafkajs acts on it. */
const crashing = new Map<string, Set<(error: unknown) => void>>();

/**
 * Calls `listener` when the consumer of `groupId` in this process crashes, before kafkajs leaves
 * the group and decides on a restart (its CRASH event comes only after both): from that moment the
 * process is out of its group, whatever follows. Returns the unsubscribe.
 */
export function onConsumerCrashing(groupId: string, listener: (error: unknown) => void): () => void {
  let listeners = crashing.get(groupId);
  if (listeners === undefined) crashing.set(groupId, (listeners = new Set()));
  const own = listeners;
  own.add(listener);
  return () => {
    own.delete(listener);
    if (own.size === 0 && crashing.get(groupId) === own) crashing.delete(groupId);
  };
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
    try {
      await kafkajsJoin.call(this);
    } catch (error) {
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
        for (const listener of [...(crashing.get(groupId) ?? [])]) {
          try {
            listener(error);
          } catch {
            // A listener's failure must not keep kafkajs from handling its crash.
          }
        }
        return kafkajsOnCrash(crashAsDecided(errors, error, groupId));
      };
    }
    return kafkajsStart.call(this);
  };
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
