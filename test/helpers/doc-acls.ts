/**
 * The ACLs docs/operations.md lists ("Secured Kafka"), read from that page itself so the
 * secured-cluster test grants exactly what operators are told to grant, no more.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AclEntry } from 'kafkajs';
import kafkajs from '../../src/kafka/kafkajs.ts';

const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = kafkajs;

export type AclUser = 'worker' | 'produce' | 'tail';

export interface DocumentedAcl {
  readonly who: AclUser;
  readonly resource: 'topic' | 'group' | 'transactional id';
  /** As written: variable names (`COMMAND_TOPIC`) stand for their values. */
  readonly name: string;
  readonly pattern: 'literal' | 'prefixed';
  readonly operations: readonly string[];
}

const ROW = /^\| (worker|produce|tail) \| (topic|group|transactional id) \| `([^`]+)` \| (literal|prefixed) \| ([A-Za-z, ]+) \|$/gm;

export function documentedAcls(page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'operations.md'), 'utf8')): DocumentedAcl[] {
  return [...page.matchAll(ROW)].map((m) => ({
    who: m[1] as AclUser,
    resource: m[2] as DocumentedAcl['resource'],
    name: m[3] ?? '',
    pattern: m[4] as DocumentedAcl['pattern'],
    operations: (m[5] ?? '').split(',').map((o) => o.trim()),
  }));
}

const RESOURCE_TYPES = { topic: AclResourceTypes.TOPIC, group: AclResourceTypes.GROUP, 'transactional id': AclResourceTypes.TRANSACTIONAL_ID };
const OPERATIONS: Record<string, number> = {
  Read: AclOperationTypes.READ,
  Write: AclOperationTypes.WRITE,
  Describe: AclOperationTypes.DESCRIBE,
  DescribeConfigs: AclOperationTypes.DESCRIBE_CONFIGS,
};

/** kafkajs ACL entries for the documented rows, variables replaced by `values`, per principal. */
export function aclEntries(
  acls: readonly DocumentedAcl[],
  values: Readonly<Record<string, string>>,
  principals: Readonly<Record<AclUser, string>>,
): AclEntry[] {
  return acls.flatMap((acl) => {
    const name = acl.name.replace(/[A-Z][A-Z0-9_]+/g, (variable) => {
      const value = values[variable];
      if (value === undefined) throw new Error(`docs/operations.md ACL names ${variable}, which the test does not set`);
      return value;
    });
    return acl.operations.map((operation) => {
      const code = OPERATIONS[operation];
      if (code === undefined) throw new Error(`docs/operations.md ACL operation ${operation} is not one the test knows`);
      return {
        resourceType: RESOURCE_TYPES[acl.resource],
        resourceName: name,
        resourcePatternType: acl.pattern === 'literal' ? ResourcePatternTypes.LITERAL : ResourcePatternTypes.PREFIXED,
        principal: `User:${principals[acl.who]}`,
        host: '*',
        operation: code,
        permissionType: AclPermissionTypes.ALLOW,
      } as AclEntry;
    });
  });
}
