/**
 * How many messages a text is billed as. Rule (documented in docs/contracts.md):
 *  - The billed text is `【signature】content` for a recipient in the home region (Chinese
 *    carriers put the signature in 【】) and `[signature] content` for any other region.
 *  - If every character is in the GSM 03.38 7-bit alphabet: 160 septets fit in one message,
 *    153 per part when longer; characters of the extension table (^{}\[~]|€ and form feed) take
 *    two septets.
 *  - Otherwise UCS-2: 70 UTF-16 code units in one message, 67 per part when longer.
 * The 【】 brackets are not GSM-7, so home-region texts are always counted as UCS-2 (70/67),
 * which is also how Chinese carriers count.
 */
const GSM7_BASIC = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);
const GSM7_EXTENSION = new Set('^{}\\[~]|€\f');

export type Encoding = 'GSM-7' | 'UCS-2';

export interface Segmentation {
  readonly encoding: Encoding;
  /** Septets (GSM-7) or UTF-16 code units (UCS-2). */
  readonly units: number;
  readonly parts: number;
}

/** Septet count, or undefined when a character is outside GSM-7. */
function gsm7Septets(text: string): number | undefined {
  let septets = 0;
  for (const char of text) {
    if (GSM7_BASIC.has(char)) septets += 1;
    else if (GSM7_EXTENSION.has(char)) septets += 2;
    else return undefined;
  }
  return septets;
}

function partsOf(units: number, single: number, perPart: number): number {
  if (units <= single) return 1;
  return Math.ceil(units / perPart);
}

export function segment(text: string): Segmentation {
  const septets = gsm7Septets(text);
  if (septets !== undefined) return { encoding: 'GSM-7', units: septets, parts: partsOf(septets, 160, 153) };
  return { encoding: 'UCS-2', units: text.length, parts: partsOf(text.length, 70, 67) };
}

export function billedText(signature: string, content: string, domestic: boolean): string {
  return domestic ? `【${signature}】${content}` : `[${signature}] ${content}`;
}
