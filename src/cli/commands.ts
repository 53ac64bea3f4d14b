/**
 * The command table and dispatcher shared by the shipped CLI (`src/cli/main.ts`, the image's
 * entry point) and the development CLI (`tools/cli.ts`, which adds `demo`). Each command is loaded
 * only when it runs, so `run` never loads the sandbox or the produce/tail code.
 */
import { CliExit } from './connection.ts';

export interface CliCommand {
  readonly name: string;
  /** One line for the command list in the help. */
  readonly summary: string;
  /** Runs the command with the arguments after its name; resolves to the exit code. */
  readonly run: (argv: readonly string[]) => Promise<number>;
}

/** What the image runs: every one of these works with production dependencies only. */
export const PRODUCT_COMMANDS: readonly CliCommand[] = [
  {
    name: 'run',
    summary: 'the worker (default), configured from the environment',
    run: async (argv) => {
      const { runWorker, RUN_HELP } = await import('./run.ts');
      if (argv.includes('--help') || argv.includes('-h')) {
        console.log(RUN_HELP);
        return 0;
      }
      return runWorker();
    },
  },
  {
    name: 'receipts',
    summary: 'the delivery-report receiver: service POSTs → DeliveryReceipt records in Kafka',
    run: async (argv) => (await import('./receipts.ts')).runReceipts(argv),
  },
  {
    name: 'sandbox',
    summary: 'a local sandbox of the messaging service on a port',
    run: async (argv) => (await import('./sandbox.ts')).runSandboxCommand(argv),
  },
  {
    name: 'produce',
    summary: 'publish commands given as JSON lines (argument, file or stdin)',
    run: async (argv) => (await import('./produce.ts')).runProduce(argv),
  },
  {
    name: 'tail',
    summary: 'print committed results as JSON lines (or a table with --pretty)',
    run: async (argv) => (await import('./tail.ts')).runTail(argv),
  },
  {
    name: 'redrive',
    summary: 'publish dead-lettered command records again (a dry run unless --execute)',
    run: async (argv) => (await import('./redrive.ts')).runRedrive(argv),
  },
];

export function cliHelp(commands: readonly CliCommand[]): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 3;
  return `sms-worker — send text messages and voice verification codes from Kafka commands

Usage: sms-worker <command> [options]

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`).join('\n')}

Run 'sms-worker <command> --help' for a command's options.
Exit codes: 0 success · 1 failure · 2 usage or configuration error`;
}

async function dispatch(argv: readonly string[], commands: readonly CliCommand[]): Promise<number> {
  const [name = 'run', ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    console.log(cliHelp(commands));
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) {
    console.error(`unknown command: ${name}\n\n${cliHelp(commands)}`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof CliExit) return error.code;
    throw error;
  }
}

/** Runs one command as the process: sets the exit status, and exits even if a client lingers. */
export function runCli(argv: readonly string[], commands: readonly CliCommand[]): void {
  dispatch(argv, commands).then(
    (code) => {
      process.exitCode = code;
      // Clients with keep-alive sockets or timers must not hold a finished command open.
      setTimeout(() => process.exit(code), 200).unref();
    },
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
