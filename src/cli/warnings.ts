/**
 * kafkajs 2.2.4 computes a throttle timer as `-1 - Date.now()` before any throttling happened,
 * which Node ≥ 23 reports as a TimeoutNegativeWarning on every connection. It is harmless (the
 * timer fires at once); hide that one warning and keep every other.
 */
export function quietKnownWarnings(): void {
  const listeners = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'TimeoutNegativeWarning') return;
    for (const listener of listeners) listener(warning);
  });
}
