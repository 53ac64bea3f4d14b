/**
 * kafkajs 2.2.4 computed its request queues' check timer as `-1 - Date.now()` before any
 * throttling happened, which Node ≥ 23 reports as a TimeoutNegativeWarning. That timer is replaced
 * (src/kafka/request-queue.ts: it also re-armed itself every millisecond) and no longer warns;
 * kafkajs's other timers (its retry, sleeps and locks) take delays computed at run time, and a
 * negative one runs after 1 ms as before, so that one warning stays hidden and every other is kept.
 */
export function quietKnownWarnings(): void {
  const listeners = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'TimeoutNegativeWarning') return;
    for (const listener of listeners) listener(warning);
  });
}
