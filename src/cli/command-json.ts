import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { SendCommand } from '../contracts/command.ts';

/**
 * The JSON a person types for `sms-worker produce` (one command per line). Friendlier than the
 * Avro JSON encoding: no union wrappers, optional commandId/createdAt, expiry as a date or a TTL.
 *
 *   {"commandId":"c1","text":{"to":["+8613800138000"],"signature":"Acme","content":"Hi"},"metadata":{"tenant":"t1"}}
 *   {"voice":{"to":"18509872103","code":"123456"},"expiresInSeconds":300,"key":"user-42"}
 */
const timestamp = z.union([z.number().int().nonnegative(), z.iso.datetime({ offset: true }).transform((s) => Date.parse(s))]);
const stringMap = z.record(z.string(), z.string());

export const commandJsonSchema = z
  .object({
    commandId: z.string().optional(),
    key: z.string().optional(),
    createdAt: timestamp.optional(),
    expiresAt: timestamp.nullable().optional(),
    expiresInSeconds: z.number().positive().optional(),
    metadata: stringMap.optional(),
    text: z
      .object({
        to: z.union([z.string(), z.array(z.string())]),
        signature: z.string(),
        content: z.string().optional(),
        templateId: z.string().optional(),
        templateData: stringMap.optional(),
      })
      .strict()
      .optional(),
    voice: z.object({ to: z.string(), code: z.string() }).strict().optional(),
  })
  .strict()
  .refine((c) => (c.text === undefined) !== (c.voice === undefined), { message: 'give exactly one of "text" and "voice"' })
  .refine((c) => c.expiresAt === undefined || c.expiresInSeconds === undefined, { message: 'give at most one of "expiresAt" and "expiresInSeconds"' });

export interface ParsedCommandLine {
  readonly command: SendCommand;
  /** Kafka key: `key` if given, else the commandId (same-key commands are sent in order). */
  readonly key: string;
}

/** One line of input → a command, or an error message naming the line's problems. */
export function parseCommandLine(line: string, now: number = Date.now()): { ok: true; value: ParsedCommandLine } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    return { ok: false, error: `invalid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = commandJsonSchema.safeParse(json);
  if (!parsed.success) {
    return { ok: false, error: parsed.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(command)'}: ${i.message}`).join('; ') };
  }
  const c = parsed.data;
  const commandId = c.commandId ?? randomUUID();
  const operation: SendCommand['operation'] =
    c.text !== undefined
      ? {
          kind: 'text',
          to: Array.isArray(c.text.to) ? c.text.to : [c.text.to],
          signature: c.text.signature,
          ...(c.text.content !== undefined && { content: c.text.content }),
          ...(c.text.templateId !== undefined && { templateId: c.text.templateId }),
          ...(c.text.templateData !== undefined && { templateData: c.text.templateData }),
        }
      : { kind: 'voice', to: c.voice?.to ?? '', code: c.voice?.code ?? '' };
  const expiresAt = c.expiresInSeconds !== undefined ? now + Math.round(c.expiresInSeconds * 1000) : (c.expiresAt ?? null);
  return {
    ok: true,
    value: { key: c.key ?? commandId, command: { commandId, createdAt: c.createdAt ?? now, expiresAt, operation, metadata: c.metadata ?? {} } },
  };
}
