#!/usr/bin/env node
// The shipped CLI: only commands that work from the image (production dependencies, no checkout).
// Development commands such as `demo` live in tools/cli.ts.
import { quietKnownWarnings } from './warnings.ts';
import { PRODUCT_COMMANDS, runCli } from './commands.ts';

quietKnownWarnings();
runCli(process.argv.slice(2), PRODUCT_COMMANDS);
