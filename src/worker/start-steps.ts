/**
 * What the worker's start (`connectWorker` in wiring.ts) waits on, step by step, as the `still
 * starting` warning names it: a start held for long says which service holds it
 * (docs/operations.md, "A worker that stays unready").
 */
export const START_STEPS = {
  certificate: "checking the Kafka broker's TLS certificate",
  tracing: 'starting tracing',
  admin: 'connecting to Kafka (the admin client)',
  topics: 'checking the topics on Kafka',
  schemas: 'registering the result and dead-letter schemas with the schema registry',
  commandSchema: (topic: string): string => `resolving the command schema of ${topic} with the schema registry`,
  handoverProducer: 'connecting the handover producer to Kafka',
  claimReads: (topic: string): string => `warming up the claim reads of ${topic} on Kafka`,
} as const;
