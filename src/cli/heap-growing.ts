import { setFlagsFromString } from 'node:v8';

/**
 * Applies HEAP_GROWING_PERCENT as V8's --heap-growing-percent: how far past what survived a full
 * collection the old generation may grow before the next one. Node does not accept the flag in
 * NODE_OPTIONS, and V8 reads it at every full collection, so setting it once the worker is ready
 * is enough (runWorker).
 * Below a 2 GiB heap cap V8's own factor is 1.3-2x, and the worker, which keeps a large live set
 * while it drains a backlog, spends 25-30% more CPU per command collecting (bench/README.md).
 * 0 leaves V8's own.
 */
export function applyHeapGrowingPercent(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${Math.trunc(percent)}`);
}
