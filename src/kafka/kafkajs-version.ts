/**
 * The kafkajs release the worker's patches of kafkajs internals were written for and tested
 * against (docs/kafka-client.md lists them). package.json pins exactly this version; this check
 * refuses to start on any other, since a patch's guard only sees that a method is there, not that
 * its body is still the one the patch replaces or wraps.
 */
export const KAFKAJS_VERSION = '2.2.4';

/** What the worker replaces or wraps inside kafkajs, for the refusal's message (docs/kafka-client.md has each with its reason). */
export const KAFKAJS_PATCHES = [
  'consumer/filterAbortedMessages.js (read_committed filter)',
  'producer/sendMessages.js (a send retried per partition)',
  'cluster/index.js Cluster.findGroupCoordinator (coordinators remembered)',
  'the private createCluster of a Kafka client (cluster.retry, coordinators of transactional producers)',
  'broker/index.js Broker.findGroupCoordinator (lookup refusals recorded)',
  'consumer/consumerGroup.js ConsumerGroup.joinAndSync (a rejoin retried in place)',
  'consumer/runner.js Runner.start (crash listeners, a fetch loop waiting for a broker)',
  'consumer/runner.js Runner.stop (leave the group first)',
  'network/requestQueue/index.js RequestQueue.scheduleCheckPendingRequests (no 1 ms timer)',
] as const;

/** Throws unless `installed` (kafkajs's package.json version) is KAFKAJS_VERSION, naming the patches that depend on it. */
export function assertKafkajsVersion(installed: unknown): void {
  if (installed === KAFKAJS_VERSION) return;
  const found = typeof installed === 'string' ? installed.slice(0, 40) : 'an unknown version';
  throw new Error(
    `kafkajs ${found} is installed, but sms-worker patches kafkajs ${KAFKAJS_VERSION}'s internals and refuses to run on another release: ` +
      `${KAFKAJS_PATCHES.join('; ')}. Install kafkajs@${KAFKAJS_VERSION} exactly (npm ci with the shipped lockfile); see docs/kafka-client.md.`,
  );
}
