import type { TestProject } from 'vitest/node';
import type { RunningStack } from '../../tools/stack/index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    schemaRegistryUrl: string;
    stackMode: string;
  }
}

/** One stack per test run, whichever integration project asks first; stopped after its last user. */
interface SharedStack {
  readonly stack: Promise<RunningStack>;
  users: number;
}

// On globalThis: each project loads this file through its own module runner, in one process. The
// stack's modules are imported once, by the first: a second copy of src/kafka/kafkajs.ts would find
// kafkajs's producer already loaded (by the first copy) and refuse to patch it.
const SHARED = Symbol.for('sms-worker.test.integration-stack');
const holder = globalThis as { [SHARED]?: SharedStack };

/**
 * Provides a real Kafka broker and schema registry to the integration tests: given addresses,
 * a running `stack:up` stack, testcontainers, or local processes (see tools/stack/index.ts). Never
 * skips: when none is possible the run fails with the reason. The integration projects share it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let shared = holder[SHARED];
  if (shared === undefined) {
    const { startStack } = await import('../../tools/stack/index.ts');
    shared = { stack: startStack({ log: (line) => console.log(line) }), users: 0 };
    holder[SHARED] = shared;
  }
  shared.users += 1;
  const stack = await shared.stack;
  console.log(`[${project.name}] stack (${stack.mode}): ${stack.description}`);
  project.provide('kafkaBrokers', stack.kafkaBrokers);
  project.provide('schemaRegistryUrl', stack.schemaRegistryUrl);
  project.provide('stackMode', stack.mode);
  const user = shared;
  return async () => {
    user.users -= 1;
    if (user.users > 0) return;
    if (holder[SHARED] === user) delete holder[SHARED];
    await stack.stop();
  };
}
