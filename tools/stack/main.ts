// `npm run stack:up | stack:down | stack:status`: a local Kafka + schema registry that outlives the
// command, for the demo, benchmarks and fast test loops (the test setup reuses it when healthy).
import { runningCliStack, startStack, stopCliStack } from './index.ts';

const command = process.argv[2] ?? 'status';

async function main(): Promise<number> {
  switch (command) {
    case 'up': {
      const existing = await runningCliStack();
      if (existing !== undefined) {
        console.log(`stack already up: ${existing.description}`);
      } else {
        const stack = await startStack({ detached: true, reuse: false });
        if (stack.mode !== 'local') {
          console.log(`stack: ${stack.description}; nothing to keep running (mode ${stack.mode})`);
          await stack.stop();
          return 0;
        }
      }
      const state = await runningCliStack();
      if (state === undefined) return 1;
      console.log(`export KAFKA_BROKERS=${state.kafkaBrokers}`);
      console.log(`export SCHEMA_REGISTRY_URL=${state.schemaRegistryUrl}`);
      return 0;
    }
    case 'down':
      console.log((await stopCliStack()) ? 'stack stopped' : 'no stack recorded');
      return 0;
    case 'status': {
      const state = await runningCliStack();
      console.log(state === undefined ? 'stack: down' : `stack: up — ${state.description}`);
      return state === undefined ? 1 : 0;
    }
    default:
      console.error(`usage: npm run stack:up | stack:down | stack:status`);
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
