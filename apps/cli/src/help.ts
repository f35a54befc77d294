import { GLOBAL_FLAGS } from './args.ts';
import { type AnyCommand, synopsis } from './command.ts';
import { loadCommands } from './commands/index.ts';
import { flagRows } from './flags.ts';
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
    ...table(flagRows(GLOBAL_FLAGS)).map((l) => `  ${l}`),
    '',
    EXIT_CODES_HELP,
    'onceq <command> --help shows the flags and examples of one command.',
    'onceq docs lists the guides this binary carries (onceq docs protocol: input, states, fencing).',
  ];
}

export function commandHelp(command: AnyCommand): string[] {
  const lines = [`usage: onceq ${synopsis(command)}`, '', command.summary];
  const operands = command.operands?.help ?? [];
  if (operands.length > 0) {
    lines.push('', 'arguments:', ...table(operands).map((l) => `  ${l}`));
  }
  const flags = flagRows(command.flags);
  if (flags.length > 0) lines.push('', 'flags:', ...table(flags).map((l) => `  ${l}`));
  if (command.notes !== undefined && command.notes.length > 0) {
    lines.push('', ...table(command.notes).map((l) => `  ${l}`));
  }
  if (command.examples !== undefined && command.examples.length > 0) {
    lines.push('', 'examples:', ...command.examples.map((e) => `  onceq ${e}`));
  }
  // A global flag the command describes itself is listed once, under its flags.
  const globals = Object.fromEntries(
    Object.entries(GLOBAL_FLAGS).filter(([name]) => !(name in command.flags)),
  );
  lines.push(
    '',
    'global flags:',
    ...table(flagRows(globals)).map((l) => `  ${l}`),
    '',
    EXIT_CODES_HELP,
  );
  return lines;
}
