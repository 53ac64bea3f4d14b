/**
 * The commands the benchmark and the chaos run publish: a realistic mix of single- and
 * multi-recipient text (content and template), voice codes, and a small share of commands that
 * fail validation (REJECTED without an HTTP call) — plus the malformed records of the fuzz pass.
 */
import type { SendCommand } from '../../src/contracts/command.ts';
import { commandToAvro } from '../../src/contracts/command.ts';

/** Deterministic PRNG, so a run's backlog can be reproduced from its seed (the sandbox's own). */
export { seededRandom as prng } from '../../src/sandbox/faults.ts';

const CN_MOBILES = ['+8613800138000', '+8613900139000', '+8618509872103', '+8615012345678', '+8617712345678'];
const FOREIGN = ['+14155552671', '+6581234567'];
const NATIONAL = ['18509872103', '13800138000', '13900139000'];
const TEXTS = [
  'Your parcel is on its way.',
  'Your verification code is 482913; it expires in 5 minutes.',
  '您的验证码是 6666，5 分钟内有效。',
  'Reminder: your appointment is tomorrow at 10:00.',
];

export type CommandKind = 'text-single' | 'text-multi' | 'text-template' | 'voice' | 'invalid';

/** Share of each kind in the mix (sums to 1). */
export const COMMAND_MIX: readonly (readonly [CommandKind, number])[] = [
  ['text-single', 0.55],
  ['text-multi', 0.2],
  ['text-template', 0.1],
  ['voice', 0.13],
  ['invalid', 0.02],
];

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)] as T;
}

export function kindAt(random: () => number): CommandKind {
  let draw = random();
  for (const [kind, share] of COMMAND_MIX) {
    if (draw < share) return kind;
    draw -= share;
  }
  return 'text-single';
}

export function makeCommand(commandId: string, kind: CommandKind, random: () => number, now = Date.now()): SendCommand {
  const base = { commandId, createdAt: now, expiresAt: null, metadata: { source: 'bench', kind } };
  switch (kind) {
    case 'text-single':
      return { ...base, operation: { kind: 'text', to: [pick(random, CN_MOBILES)], signature: 'Acme', content: pick(random, TEXTS) } };
    case 'text-multi': {
      const count = 2 + Math.floor(random() * 4);
      const to = Array.from({ length: count }, (_, i) => (i === 0 ? pick(random, FOREIGN) : pick(random, CN_MOBILES)));
      return { ...base, operation: { kind: 'text', to, signature: 'Acme', content: pick(random, TEXTS) } };
    }
    case 'text-template':
      return {
        ...base,
        operation: {
          kind: 'text',
          to: [pick(random, NATIONAL)],
          signature: '合一短信',
          templateId: 'pub_verif_cn',
          templateData: { code: String(1000 + Math.floor(random() * 9000)), ttl: '5' },
        },
      };
    case 'voice':
      return { ...base, operation: { kind: 'voice', to: pick(random, NATIONAL), code: String(100000 + Math.floor(random() * 900000)) } };
    case 'invalid':
      // Encodes fine, fails validation: a bad number and a one-character signature.
      return { ...base, operation: { kind: 'text', to: ['+86123'], signature: 'A', content: 'never sent' } };
  }
}

/**
 * The route the sandbox refuses (src/sandbox/pricing.ts: `AU: { text: null }`, code 101301 "no
 * valid upstream"), and a valid AU mobile number on it (libphonenumber-js/max: AU, MOBILE): the
 * worker validates recipients before sending, so an invalid number would be REJECTED unsent.
 */
export const REFUSED_REGION = 'AU';
export const REFUSED_ROUTE_RECIPIENT = '+61412345678';

/** A single-recipient text to the refused region: the service answers it 101301. */
export function refusedRouteCommand(commandId: string, now = Date.now()): SendCommand {
  return {
    commandId,
    createdAt: now,
    expiresAt: null,
    metadata: { source: 'bench', kind: 'refused-route' },
    operation: { kind: 'text', to: [REFUSED_ROUTE_RECIPIENT], signature: 'Acme', content: 'Your parcel is on its way.' },
  };
}

/** What the open loop publishes: the usual mix, or (a share of it) a command to the refused route. */
export type OpenLoopKind = CommandKind | 'refused-route';

/**
 * The open loop's next command. `refusal`, when given, turns `share` of the commands into
 * refused-route ones, decided by its own random stream (one draw per command); the mix's stream
 * is drawn exactly as without it, so every other command is the one the all-routable run
 * publishes under the same id (same seed).
 */
export function openLoopCommand(
  commandId: string,
  random: () => number,
  refusal: { readonly random: () => number; readonly share: number } | undefined,
  now = Date.now(),
): { readonly kind: OpenLoopKind; readonly command: SendCommand } {
  const kind = kindAt(random);
  const usual = makeCommand(commandId, kind, random, now);
  if (refusal !== undefined && refusal.random() < refusal.share) return { kind: 'refused-route', command: refusedRouteCommand(commandId, now) };
  return { kind, command: usual };
}

/**
 * A verification code, as the priority topic carries them: a voice code or a template text with
 * a code, each to one recipient, half and half (from `random`).
 */
export function verificationCode(commandId: string, random: () => number, now = Date.now()): { readonly kind: CommandKind; readonly command: SendCommand } {
  const kind: CommandKind = random() < 0.5 ? 'voice' : 'text-template';
  return { kind, command: makeCommand(commandId, kind, random, now) };
}

export type FuzzKind = 'random-bytes' | 'wrong-magic' | 'unknown-schema-id' | 'truncated-avro' | 'invalid-fields';
export const FUZZ_KINDS: readonly FuzzKind[] = ['random-bytes', 'wrong-magic', 'unknown-schema-id', 'truncated-avro', 'invalid-fields'];

/**
 * One malformed record. `encode` gives a valid Confluent-framed command (registry encode); the
 * other kinds are derived from it or made up. `invalid-fields` records decode and map but fail
 * validation (REJECTED result); every other kind cannot be decoded (dead-letter topic).
 */
export async function fuzzRecord(
  kind: FuzzKind,
  id: string,
  random: () => number,
  encode: (value: Record<string, unknown>) => Promise<Buffer>,
): Promise<Buffer> {
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
  switch (kind) {
    case 'random-bytes': {
      const value = bytes(1 + Math.floor(random() * 200));
      // A leading 0 would be read as Confluent framing with a random schema id; keep it "random bytes".
      if (value[0] === 0) value[0] = 0xff;
      return value;
    }
    case 'wrong-magic': {
      const value = Buffer.from(await encode(commandToAvro(makeCommand(id, 'text-single', random))));
      value[0] = 1 + Math.floor(random() * 255);
      return value;
    }
    case 'unknown-schema-id': {
      const valid = await encode(commandToAvro(makeCommand(id, 'voice', random)));
      const value = Buffer.from(valid);
      value.writeInt32BE(900_000_000 + Math.floor(random() * 1_000_000), 1);
      return value;
    }
    case 'truncated-avro': {
      const valid = await encode(commandToAvro(makeCommand(id, 'text-multi', random)));
      // Keep the 5-byte header and cut the Avro body short.
      return valid.subarray(0, 5 + Math.floor(random() * Math.max(1, valid.length - 10)));
    }
    case 'invalid-fields': {
      const invalid: SendCommand[] = [
        { commandId: id, createdAt: Date.now(), expiresAt: null, metadata: {}, operation: { kind: 'text', to: [], signature: 'Acme', content: 'x' } },
        { commandId: id, createdAt: Date.now(), expiresAt: null, metadata: {}, operation: { kind: 'text', to: ['+8613800138000'], signature: 'Acme' } },
        { commandId: id, createdAt: Date.now(), expiresAt: null, metadata: {}, operation: { kind: 'voice', to: '+14155552671', code: '12' } },
        {
          commandId: id,
          createdAt: Date.now(),
          expiresAt: null,
          metadata: {},
          operation: { kind: 'text', to: ['not a number'], signature: 'A very long signature indeed', content: 'x', templateId: 'y' },
        },
      ];
      return encode(commandToAvro(pick(random, invalid)));
    }
  }
}
