import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { envSchema, SECRET_VARIABLES } from './schema.ts';
import { withSecretFiles } from './secret-files.ts';

/**
 * How to reach Kafka and the schema registry: the part of the configuration the worker shares with
 * the `produce` and `tail` commands, so that they honour the same TLS, SASL and registry
 * credentials from the same variables.
 */
export interface KafkaSettings {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly ssl: false | { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly rejectUnauthorized: boolean };
  readonly sasl: undefined | { readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; readonly username: string; readonly password: string };
}

export interface RegistrySettings {
  readonly url: string;
  readonly auth?: { readonly username: string; readonly password: string };
}

export interface ConnectionSettings {
  readonly kafka: KafkaSettings;
  readonly registry: RegistrySettings;
}

export const connectionSchema = envSchema.pick({
  KAFKA_BROKERS: true,
  KAFKA_CLIENT_ID: true,
  KAFKA_SSL: true,
  KAFKA_SSL_CA_FILE: true,
  KAFKA_SSL_CERT_FILE: true,
  KAFKA_SSL_KEY_FILE: true,
  KAFKA_SSL_REJECT_UNAUTHORIZED: true,
  KAFKA_SASL_MECHANISM: true,
  KAFKA_SASL_USERNAME: true,
  KAFKA_SASL_PASSWORD: true,
  SCHEMA_REGISTRY_URL: true,
  SCHEMA_REGISTRY_USERNAME: true,
  SCHEMA_REGISTRY_PASSWORD: true,
});

export type ConnectionEnv = z.output<typeof connectionSchema>;

function readFile(path: string | undefined, variable: string, problems: string[]): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    problems.push(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
}

/** The checks across variables and the files to read; problems are appended, never thrown one by one. */
export function connectionSettings(e: ConnectionEnv, problems: string[]): ConnectionSettings {
  if (e.KAFKA_SASL_MECHANISM !== 'none' && (e.KAFKA_SASL_USERNAME === undefined || e.KAFKA_SASL_PASSWORD === undefined)) {
    problems.push(`KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD: both are required when KAFKA_SASL_MECHANISM is ${e.KAFKA_SASL_MECHANISM}`);
  }
  if ((e.SCHEMA_REGISTRY_USERNAME === undefined) !== (e.SCHEMA_REGISTRY_PASSWORD === undefined)) {
    problems.push('SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD: give both or neither');
  }
  const ca = readFile(e.KAFKA_SSL_CA_FILE, 'KAFKA_SSL_CA_FILE', problems);
  const cert = readFile(e.KAFKA_SSL_CERT_FILE, 'KAFKA_SSL_CERT_FILE', problems);
  const key = readFile(e.KAFKA_SSL_KEY_FILE, 'KAFKA_SSL_KEY_FILE', problems);
  return {
    kafka: {
      brokers: e.KAFKA_BROKERS,
      clientId: e.KAFKA_CLIENT_ID,
      ssl: e.KAFKA_SSL ? { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }), rejectUnauthorized: e.KAFKA_SSL_REJECT_UNAUTHORIZED } : false,
      sasl:
        e.KAFKA_SASL_MECHANISM === 'none'
          ? undefined
          : { mechanism: e.KAFKA_SASL_MECHANISM, username: e.KAFKA_SASL_USERNAME ?? '', password: e.KAFKA_SASL_PASSWORD ?? '' },
    },
    registry: {
      url: e.SCHEMA_REGISTRY_URL.replace(/\/+$/, ''),
      ...(e.SCHEMA_REGISTRY_USERNAME !== undefined &&
        e.SCHEMA_REGISTRY_PASSWORD !== undefined && { auth: { username: e.SCHEMA_REGISTRY_USERNAME, password: e.SCHEMA_REGISTRY_PASSWORD } }),
    },
  };
}

/** zod issues as the ConfigError lines the worker prints: the variable, never a secret's value. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const variable = issue.path.join('.');
    const secret = (SECRET_VARIABLES as readonly string[]).includes(variable);
    return `${variable}: ${secret ? 'is required' : issue.message}`;
  });
}

/** The connection's secrets: each may come from a file (`<NAME>_FILE`, secret-files.ts). */
export const CONNECTION_SECRET_VARIABLES = ['KAFKA_SASL_PASSWORD', 'SCHEMA_REGISTRY_PASSWORD'] as const;

/** Only the connection variables, for the commands that talk to Kafka but send nothing (produce, tail). */
export function loadConnectionConfig(given: NodeJS.ProcessEnv = process.env): ConnectionSettings {
  const problems: string[] = [];
  const env = withSecretFiles(given, CONNECTION_SECRET_VARIABLES, problems);
  const parsed = connectionSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError([...describeIssues(parsed.error.issues), ...problems]);
  const settings = connectionSettings(parsed.data, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return settings;
}
