import { defineConfig } from 'vitest/config';

// Two projects: pure unit tests (no I/O beyond loopback HTTP) and integration tests that need the
// real Kafka broker and schema registry the global setup provides (see tools/stack/).
export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.int.test.ts'],
          environment: 'node',
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          environment: 'node',
          globalSetup: ['test/setup/global-stack.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // The stack is shared; files run in parallel workers but each test uses its own topics and groups.
          fileParallelism: true,
          maxWorkers: 2,
          // Unit tests first: they need nothing, and fail fast.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
