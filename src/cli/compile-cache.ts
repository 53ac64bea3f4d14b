import { flushCompileCache } from 'node:module';

/**
 * Loads every module a shipped command loads, and writes them to V8's compile cache when one is
 * on (NODE_COMPILE_CACHE): the image's build runs this into the directory its NODE_COMPILE_CACHE
 * names (Dockerfile), so a new pod reads compiled code instead of parsing and compiling its
 * dependencies again. A pod's start competes for CPU with the pods that work: in the image,
 * loading what `run` loads costs about 80 ms of CPU less with the cache (docs/operations.md).
 *
 * Node keys the cache by its version, the architecture and the user id, and checks each entry
 * against its file's contents: a cache of another build, version or user is not used (a pod run
 * as another uid compiles as without it, and cannot write the read-only directory).
 */
export async function loadShippedModules(): Promise<void> {
  await Promise.all([
    import('./run.ts'),
    import('./receipts.ts'),
    // Loaded only when tracing starts (observability/tracing.ts).
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  flushCompileCache();
}
