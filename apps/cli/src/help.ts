import { GLOBAL_FLAG_HELP } from './args.ts';
import type { AnyCommand } from './command.ts';
import { loadCommands } from './commands/index.ts';
import { table } from './output.ts';

export const EXIT_CODES_HELP =
  'exit codes: 0 ok · 1 internal error · 2 usage error · 3 input rejected · 4 protocol refusal';

/** `onceq --help`: every command with its summary (loads every command module). */
export async function globalHelp(version: string): Promise<string[]> {
  const commands = await loadCommands();
  return [
    `onceq ${version}: a reliable exactly-once queue`,
    '',
    'usage: onceq <command> [flags]',
    '',
    'commands:',
    ...table(commands.map((c) => [c.name, c.summary])).map((l) => `  ${l}`),
    '',
    'global flags:',
    ...table(GLOBAL_FLAG_HELP).map((l) => `  ${l}`),
    '',
    EXIT_CODES_HELP,
    'onceq <command> --help shows the flags and examples of one command.',
    'The protocol (input format, states, fencing, retries) is described in docs/protocol.md.',
  ];
}

export function commandHelp(command: AnyCommand): string[] {
  const lines = [`usage: onceq ${command.usage}`, '', command.summary];
  if (command.flags.length > 0) {
    lines.push('', 'flags:', ...table(command.flags).map((l) => `  ${l}`));
  }
  if (command.examples !== undefined && command.examples.length > 0) {
    lines.push('', 'examples:', ...command.examples.map((e) => `  onceq ${e}`));
  }
  lines.push(
    '',
    'global flags:',
    ...table(GLOBAL_FLAG_HELP).map((l) => `  ${l}`),
    '',
    EXIT_CODES_HELP,
  );
  return lines;
}
