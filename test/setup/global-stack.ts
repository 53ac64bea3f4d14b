import type { TestProject } from 'vitest/node';
import { startStack } from '../../tools/stack/index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    schemaRegistryUrl: string;
    stackMode: string;
  }
}

/**
 * Provides a real Kafka broker and schema registry to the integration tests: given addresses,
 * a running `stack:up` stack, testcontainers, or local processes (see tools/stack/index.ts). Never
 * skips: when none is possible the run fails with the reason.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stack = await startStack({ log: (line) => console.log(line) });
  console.log(`[integration] stack (${stack.mode}): ${stack.description}`);
  project.provide('kafkaBrokers', stack.kafkaBrokers);
  project.provide('schemaRegistryUrl', stack.schemaRegistryUrl);
  project.provide('stackMode', stack.mode);
  return async () => {
    await stack.stop();
  };
}
