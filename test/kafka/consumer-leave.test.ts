import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import '../../src/kafka/kafkajs.ts';

// kafkajs's own Runner and ConsumerGroup classes (no broker), with the changes src/kafka/kafkajs.ts
// installs: the runner's stop, and the group's real leave, whose LeaveGroup goes to a recording coordinator.
const require = createRequire(import.meta.url);
const Runner = require('kafkajs/src/consumer/runner.js') as { prototype: object };
const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as { prototype: object };

/** A running runner whose fetch loop takes `fetchStopMs` to end, and what happened, in order. */
function runnerWith(fetchStopMs: number): { stop(): Promise<void>; events: string[] } {
  const events: string[] = [];
  const consumerGroup: { memberId: string | null } = Object.assign(Object.create(ConsumerGroup.prototype) as object, {
    groupId: 'group',
    memberId: 'member-1',
    coordinator: {
      // What kafkajs's heartbeat would send with meanwhile: it heartbeats only while the group has a member id.
      leaveGroup: async ({ memberId }: { memberId: string }) => void events.push(`LeaveGroup ${memberId}, heartbeats with ${String(consumerGroup.memberId)}`),
    },
  });
  const runner = Object.assign(Object.create(Runner.prototype) as { stop(): Promise<void> }, {
    running: true,
    _consuming: false,
    logger: { debug: () => undefined },
    consumerGroup,
    fetchManager: {
      stop: async () => {
        await sleep(fetchStopMs);
        events.push('fetch loop ended');
      },
    },
  });
  return { stop: () => runner.stop(), events };
}

describe('a consumer’s stop', () => {
  it('leaves the group before its fetch loop ends (kafkajs left last, up to a fetch wait later, while the partitions waited), its member id dropped first so no heartbeat goes out with it after the LeaveGroup', async () => {
    const { stop, events } = runnerWith(50);
    await stop();
    expect(events).toEqual(['LeaveGroup member-1, heartbeats with null', 'fetch loop ended']);
  });

  it('leaves once: a second stop sends nothing, and kafkajs’s own leave after the first finds no member id', async () => {
    const { stop, events } = runnerWith(0);
    await stop();
    await stop();
    expect(events).toEqual(['LeaveGroup member-1, heartbeats with null', 'fetch loop ended']);
  });
});
