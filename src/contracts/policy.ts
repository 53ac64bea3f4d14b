/**
 * The validation policy: the limits and choices of validate.ts that a deployment sets (see
 * src/config). Its own module, so recipients.ts and validate.ts both read it without importing
 * each other.
 */
import { DEFAULT_GEO_POLICY, type GeoPolicy } from './geo.ts';
import type { CountryCode } from './phone.ts';

export interface ValidationPolicy {
  /** Region whose national numbers are accepted without '+', and the only region voice calls go to. @defaultValue 'CN' */
  readonly homeRegion: CountryCode;
  /**
   * Most entries in a text message's `to`, counted as given (before removing duplicates and
   * invalid numbers), so that neither the work nor the REJECTED result grows with a huge list.
   * Our limit: the service publishes none (spec §8), and one command should not be able to spend
   * without bound. @defaultValue 1000
   */
  readonly maxRecipients: number;
  /**
   * `reject`: any invalid recipient rejects the whole command. `send-valid`: send to the valid
   * recipients and list the invalid ones in the result's `rejectedRecipients`. @defaultValue 'reject'
   */
  readonly partialRecipients: 'reject' | 'send-valid';
  /** Most Unicode code points in `content` (spec §8: "maximum content length: not shown"). @defaultValue 500 */
  readonly maxContentChars: number;
  /**
   * Most billed messages per recipient for `content` with its signature (GSM-7 160/153, UCS-2
   * 70/67, see src/contracts/segments.ts): recipients × this bounds what one command is billed.
   * @defaultValue 8
   */
  readonly maxContentSegments: number;
  /** Most Unicode code points in `templateId`. @defaultValue 128 */
  readonly maxTemplateIdChars: number;
  /** Most entries in `templateData` (spec §8: "template variable limits: not shown"). @defaultValue 20 */
  readonly maxTemplateVariables: number;
  /** Most Unicode code points in one template variable name. @defaultValue 64 */
  readonly maxTemplateKeyChars: number;
  /** Most Unicode code points in one template variable value. @defaultValue 500 */
  readonly maxTemplateValueChars: number;
  /** Most metadata entries. Metadata is echoed into every result. @defaultValue 32 */
  readonly maxMetadataEntries: number;
  /** Most metadata bytes, keys and values together, in UTF-8. @defaultValue 4096 */
  readonly maxMetadataBytes: number;
  /**
   * Geo permissions (geo.ts): the destination regions allowed and denied, for all operations and
   * per operation, and whether a recipient outside them is refused or only reported.
   * @defaultValue every region allowed (DEFAULT_GEO_POLICY)
   */
  readonly geo: GeoPolicy;
}

export const DEFAULT_VALIDATION_POLICY = {
  homeRegion: 'CN',
  maxRecipients: 1000,
  partialRecipients: 'reject',
  maxContentChars: 500,
  maxContentSegments: 8,
  maxTemplateIdChars: 128,
  maxTemplateVariables: 20,
  maxTemplateKeyChars: 64,
  maxTemplateValueChars: 500,
  maxMetadataEntries: 32,
  maxMetadataBytes: 4096,
  geo: DEFAULT_GEO_POLICY,
} as const satisfies ValidationPolicy;
