import { GLOBAL_FLAGS } from './args.ts';
import { type AnyCommand, synopsis } from './command.ts';
import { flagRows } from './flags.ts';
import { EXIT_CODES_HELP } from './help.ts';

const cell = (text: string) => text.replace(/\|/g, '\\|');
/** Prose cells: a `<regex>` would be read as an HTML tag. */
const prose = (text: string) => cell(text).replace(/</g, '&lt;');

/**
 * docs/cli.md, derived from the command specs: one table of commands, then each command's
 * synopsis, arguments, flags and examples. `bun scripts/cli-docs.ts` writes it and a test
 * fails when the page and the specs differ.
 */
export function cliReference(commands: readonly AnyCommand[]): string {
  const lines = [
    '# Command reference',
    '',
    '<!-- Written by `bun scripts/cli-docs.ts` from the command specs in apps/cli/src/commands; do not edit by hand. -->',
    '',
    'Usage: `onceq <command> [flags]`. Global flags stand before or after the command.',
    '`onceq <command> --help` prints the same as the section of that command below.',
    '',
    '| command | does |',
    '|---|---|',
    ...commands.map((c) => `| [\`${c.name}\`](#${c.name}) | ${prose(c.summary)} |`),
    '',
    '## Global flags',
    '',
    '| flag | meaning |',
    '|---|---|',
    ...flagRows(GLOBAL_FLAGS).map(([flag, help]) => `| \`${cell(flag)}\` | ${prose(help)} |`),
    '',
    `${EXIT_CODES_HELP.replace(/^exit codes: /, 'Exit codes: ')}. Errors go to stderr as one sentence naming the line, id or flag at fault.`,
  ];
  for (const c of commands) {
    lines.push(
      '',
      `## ${c.name}`,
      '',
      '```text',
      `onceq ${synopsis(c)}`,
      '```',
      '',
      `${c.summary}.`,
    );
    const rows = [...(c.operands?.help ?? []), ...flagRows(c.flags)];
    if (rows.length > 0) {
      lines.push('', '| argument or flag | meaning |', '|---|---|');
      for (const [flag, help] of rows) lines.push(`| \`${cell(flag)}\` | ${prose(help)} |`);
    }
    if (c.notes !== undefined && c.notes.length > 0) {
      lines.push(
        '',
        ...c.notes
          .map(([label, text]) => `${label === '' ? '' : `${label}: `}${text}`.trim())
          .map((l) => `- ${l}`),
      );
    }
    if (c.examples !== undefined && c.examples.length > 0) {
      lines.push('', '```sh', ...c.examples.map((e) => `onceq ${e}`), '```');
    }
  }
  return `${lines.join('\n')}\n`;
}
