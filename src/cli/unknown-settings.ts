import { unknownSettings } from '../config/index.ts';
import type { Logger } from '../observability/logger.ts';
import { RECEIPTS_SECRET_VARIABLES, receiptsEnvSchema } from '../receipts/config.ts';

/**
 * One warning per variable that looks like a setting of ours but is none (a misspelt name, our
 * `SMS_WORKER_` prefix): otherwise its default applies silently. The worker's and the receiver's
 * settings both count as known, so a deployment may give both processes one environment. Only the
 * name is logged, never the value (it may be a secret).
 */
export function warnUnknownSettings(env: NodeJS.ProcessEnv, logger: Logger, who: 'worker' | 'receipts receiver'): void {
  const receipts = [...Object.keys(receiptsEnvSchema.shape), ...RECEIPTS_SECRET_VARIABLES.map((name) => `${name}_FILE`)];
  for (const { name, didYouMean } of unknownSettings(env, receipts)) {
    logger.warn(
      { variable: name, ...(didYouMean !== undefined && { didYouMean }) },
      `${name} is not a setting of the ${who} and is ignored${didYouMean === undefined ? '' : `; did you mean ${didYouMean}?`}`,
    );
  }
}
