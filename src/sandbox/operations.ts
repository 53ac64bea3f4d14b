/**
 * The two operations as pure functions of (command, balance): price every recipient, refuse
 * when a region has no route (101301) or the balance is short (105400, nothing charged), or
 * answer the spec's success envelope with the new balance. Message ids come from the caller.
 */
import type { SendResult } from '../provider/types.ts';
import type { ErrorEnvelope } from './error-codes.ts';
import { errorEnvelope } from './error-codes.ts';
import { billedText, segment } from '../contracts/segments.ts';
import { formatMoney } from './money.ts';
import { textRoute, voiceRoute } from './pricing.ts';
import type { Route } from './pricing.ts';
import type { Recipient, TextCommand, VoiceCommand } from './validate.ts';

export interface SuccessEnvelope {
  readonly code: '0';
  readonly message: 'Success';
  readonly data: SendResult;
}

export type OperationAnswer =
  | { readonly ok: true; readonly envelope: SuccessEnvelope; readonly chargedMicros: bigint; readonly balanceMicros: bigint }
  | { readonly ok: false; readonly envelope: ErrorEnvelope };

interface Line {
  readonly recipient: Recipient;
  readonly route: Route;
  readonly messageCount: number;
  readonly priceMicros: bigint;
}

function settle(lines: readonly Line[], balanceMicros: bigint, nextId: () => string): OperationAnswer {
  let totalMicros = 0n;
  let messageCount = 0;
  for (const line of lines) {
    totalMicros += line.priceMicros;
    messageCount += line.messageCount;
  }
  if (totalMicros > balanceMicros) return { ok: false, envelope: errorEnvelope('insufficientFunds') };
  const total = formatMoney(totalMicros);
  return {
    ok: true,
    chargedMicros: totalMicros,
    balanceMicros: balanceMicros - totalMicros,
    envelope: {
      code: '0',
      message: 'Success',
      data: {
        recipients: lines.length,
        messageCount,
        totalAmount: total,
        payAmount: total,
        virtualAmount: formatMoney(0n),
        messages: lines.map((line) => ({
          id: nextId(),
          to: line.recipient.e164,
          regionCode: line.recipient.regionCode,
          countryCode: line.recipient.countryCode,
          messageCount: line.messageCount,
          status: 'sent',
          upstream: line.route.upstream,
          price: formatMoney(line.priceMicros),
        })),
      },
    },
  };
}

/** Billing of one text recipient (src/contracts/segments.ts has the counting rule). */
export function textLine(
  command: TextCommand,
  recipient: Recipient,
  homeRegion: string,
  routeOf: (regionCode: string) => Route | undefined = textRoute,
): Line | undefined {
  const route = routeOf(recipient.regionCode);
  if (route === undefined) return undefined;
  const domestic = recipient.regionCode === homeRegion;
  const messageCount = segment(billedText(command.signature, command.text, domestic)).parts;
  return { recipient, route, messageCount, priceMicros: route.priceMicros * BigInt(messageCount) };
}

export function sendText(
  command: TextCommand,
  homeRegion: string,
  balanceMicros: bigint,
  nextId: () => string,
  routeOf: (regionCode: string) => Route | undefined = textRoute,
): OperationAnswer {
  const lines: Line[] = [];
  for (const recipient of command.recipients) {
    const line = textLine(command, recipient, homeRegion, routeOf);
    // One recipient without a route fails the whole call: the service answers per call, not per recipient.
    if (line === undefined) return { ok: false, envelope: errorEnvelope('noUpstream') };
    lines.push(line);
  }
  return settle(lines, balanceMicros, nextId);
}

export function sendVoice(command: VoiceCommand, homeRegion: string, balanceMicros: bigint, nextId: () => string): OperationAnswer {
  const { recipient } = command;
  const route = recipient.regionCode === homeRegion ? voiceRoute(recipient.regionCode) : undefined;
  if (route === undefined) return { ok: false, envelope: errorEnvelope('noUpstream') };
  return settle([{ recipient, route, messageCount: 1, priceMicros: route.priceMicros }], balanceMicros, nextId);
}
