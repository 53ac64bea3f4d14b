/** Small promise helpers for code that waits and must be able to give up. */

export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** `promise`, or a rejection with the signal's reason as soon as it is aborted. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

/**
 * Resolves after `ms`, or as soon as `wake` settles; rejects with the signal's reason once it is
 * aborted. The global timer (cleared either way), so a test's fake clock drives it.
 */
export async function abortableDelay(ms: number, signal: AbortSignal, wake?: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const due = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  try {
    await abortable(wake === undefined ? due : Promise.race([wake, due]), signal);
  } finally {
    clearTimeout(timer);
  }
}
