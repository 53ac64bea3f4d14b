import { readdirSync } from 'node:fs';
import { createRequire, flushCompileCache } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { loadTracingSdk } from '../observability/tracing.ts';

/**
 * Loads every module a shipped command loads, and writes them to V8's compile cache when one is
 * on (NODE_COMPILE_CACHE): the image's build runs this into the directory its NODE_COMPILE_CACHE
 * names (Dockerfile), so a new pod reads compiled code instead of parsing and compiling its
 * dependencies again. A pod's start competes for CPU with the pods that work (docs/operations.md
 * has the figures).
 *
 * Node keys the cache by its version, the architecture and the user id, and checks each entry
 * against its file's contents and V8's flags: a cache of another build, version or user is not
 * used (a pod run as another uid compiles as without it, and cannot write the read-only
 * directory), nor is it for a module loaded after a V8 flag changed (runWorker applies
 * HEAP_GROWING_PERCENT only once the worker is ready).
 */
export async function loadShippedModules(): Promise<void> {
  await Promise.all([import('./run.ts'), import('./receipts.ts'), loadTracingSdk(), import('./commands.ts'), import('./warnings.ts')]);
  loadKafkaProtocolModules();
  flushCompileCache();
}

/**
 * kafkajs loads a request's module at the first request of each API version it sends (221 files):
 * all of them, so whichever versions the brokers speak come from the cache.
 */
function loadKafkaProtocolModules(): void {
  const require = createRequire(import.meta.url);
  const requests = join(dirname(require.resolve('kafkajs')), 'src', 'protocol', 'requests');
  for (const entry of readdirSync(requests, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && /^v\d+$/.test(basename(entry.parentPath)) && /^(request|response)\.js$/.test(entry.name)) require(join(entry.parentPath, entry.name));
  }
}
