import type { PartitionAssigner } from 'kafkajs';
import { AssignerProtocol, PartitionAssigners } from './kafkajs.ts';
import { decodeReport, encodeOwned, stickyPlan, type Owned } from './sticky-assignment.ts';

export const STICKY_ASSIGNER = 'SmsWorkerStickyAssigner';

/** What the assigner asks of the worker, and tells it. */
export interface StickyMember {
  /** The partitions this member holds now (per topic), sent in its join metadata. */
  owned(): Owned;
  /** Called once per JoinGroup request this member sends (kafkajs asks each assigner for its metadata then). */
  joining(): void;
  /** Whether this member is shutting down: it reports it, and the leader gives it nothing (stickyPlan). */
  leaving?(): boolean;
}

/**
 * A kafkajs partition assigner that keeps partitions where they are (sticky-assignment.ts): each
 * member reports what it holds in its join metadata, and the leader keeps it there up to a fair
 * share. Listed before kafkajs's round robin, so a group whose members all run this version uses it,
 * and a group mid-upgrade (older members know only round robin) falls back to round robin.
 */
export function stickyAssigner(member: StickyMember): PartitionAssigner {
  return ({ cluster }) => ({
    name: STICKY_ASSIGNER,
    version: 1,
    protocol({ topics }) {
      member.joining();
      const userData = encodeOwned(member.owned(), member.leaving?.() ?? false);
      return { name: STICKY_ASSIGNER, metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData }) };
    },
    assign({ members, topics }) {
      const partitions = new Map(topics.map((topic) => [topic, cluster.findTopicPartitionMetadata(topic).map((m) => m.partitionId)]));
      const reports = new Map(members.map((m) => [m.memberId, decodeReport(AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.userData)]));
      const plan = stickyPlan(
        members.map((m) => m.memberId),
        partitions,
        new Map([...reports].map(([id, r]) => [id, r.owned])),
        new Set([...reports].filter(([, r]) => r.leaving).map(([id]) => id)),
      );
      return Promise.resolve(
        [...plan].map(([memberId, assignment]) => ({
          memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment, userData: Buffer.alloc(0) }),
        })),
      );
    },
  });
}

/** The worker's assigners, in preference order: sticky, then kafkajs's round robin (what older members know). */
export function workerAssigners(member: StickyMember): PartitionAssigner[] {
  return [stickyAssigner(member), PartitionAssigners.roundRobin];
}
