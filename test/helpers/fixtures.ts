/**
 * The shared preambles of the test files: what a test starts it hands to `useCleanups()`, and the
 * sandbox a file (or describe block) talks to comes from `useSandbox()`. Call them at the top of a
 * file or describe block, like the hooks they register. Vitest runs after-hooks in reverse order of
 * registration (`sequence.hooks: 'stack'`), so call `useSandbox()` before `useCleanups()`: a test's
 * workers and clients are then stopped before the sandbox is reset or closed.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/server.ts';

export type Cleanup = () => unknown;

export interface Cleanups {
  /** Runs `cleanup` after the current test, before the ones added earlier. */
  add(cleanup: Cleanup): void;
}

/**
 * Registers an afterEach that runs the cleanups added during the test, newest first. Each one runs
 * even when an earlier one failed; their failures are ignored (a worker the test already killed
 * may refuse to stop), as the preambles this replaces did.
 */
export function useCleanups(): Cleanups {
  const cleanups: Cleanup[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch {
        // ignored: see above
      }
    }
  });
  return { add: (cleanup) => void cleanups.push(cleanup) };
}

export interface SandboxFixture {
  /** `state.reset()` after each test (request log, faults, balance): tests share the sandbox, not its state. @defaultValue false */
  readonly resetAfterEach?: boolean;
}

/**
 * Starts a sandbox on loopback (a free port) before the file's (or describe block's) tests and
 * closes it after them. The returned object stands for it: use it in tests and hooks, not at
 * import time (it throws until the sandbox is started).
 */
export function useSandbox(options: SandboxOptions = {}, fixture: SandboxFixture = {}): RunningSandbox {
  let running: RunningSandbox | undefined;
  const current = (): RunningSandbox => {
    if (running === undefined) throw new Error('useSandbox(): the sandbox is only there inside tests and hooks');
    return running;
  };
  beforeAll(async () => {
    running = await startSandbox({ port: 0, ...options });
  });
  afterAll(async () => {
    await running?.close();
    running = undefined;
  });
  if (fixture.resetAfterEach === true)
    afterEach(() => {
      running?.state.reset();
      for (const account of running?.accounts.values() ?? []) account.state.reset();
    });
  return {
    get url() {
      return current().url;
    },
    get port() {
      return current().port;
    },
    get state() {
      return current().state;
    },
    get accounts() {
      return current().accounts;
    },
    setFaults: (update) => current().setFaults(update),
    setAnswerFaults: (targets) => current().setAnswerFaults(targets),
    close: () => current().close(),
  };
}
