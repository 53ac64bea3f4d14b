/** The priorities a command can have: the topic it is published to decides which (docs/priority.md). */
export type Priority = 'high' | 'normal';

/** Every priority, highest first: a bounded `priority` label on metrics. */
export const PRIORITIES: readonly Priority[] = ['high', 'normal'];
