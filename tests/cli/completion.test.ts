/**
 * Shell completion really completes: the script `onceq completion bash` prints is
 * sourced into a real bash, and its function is driven as bash drives it on <TAB>
 * (COMP_WORDS / COMP_CWORD in, COMPREPLY out). The expected flags come from the command
 * registry itself, so a flag added to a command and missing from completion fails here.
 * zsh and fish are run only where installed (`zsh -n` / `fish -n`: the script parses);
 * their per-command flag lists are checked against the registry either way.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GLOBAL_FLAGS } from '@onceq/cli/args.ts';
import type { AnyCommand } from '@onceq/cli/command.ts';
import { COMMAND_NAMES, loadCommands } from '@onceq/cli/commands/index.ts';
import { flagWords } from '@onceq/cli/flags.ts';
import { type CliSandbox, cliSandbox } from '../support/cli.ts';
import { runProcess } from '../support/spawn.ts';

let box: CliSandbox;
let commands: AnyCommand[];
const scripts: Record<string, string> = {};

/** Every flag `onceq <command>` accepts, from the registry: `--db`, `--json`, … */
function flagsOf(command: AnyCommand): string[] {
  return [...new Set([...flagWords(GLOBAL_FLAGS), ...flagWords(command.flags)])].sort();
}

beforeAll(async () => {
  box = cliSandbox();
  commands = await loadCommands();
  for (const shell of ['bash', 'zsh', 'fish']) {
    const r = await box.run(['completion', shell]);
    if (r.code !== 0) throw new Error(`completion ${shell} exited ${r.code}: ${r.stderr}`);
    scripts[shell] = r.stdout;
    writeFileSync(join(box.cwd, `onceq.${shell}`), r.stdout);
  }
});

afterAll(() => box.cleanup());

/**
 * Sources the bash script once and completes each line of `cases` (words separated by
 * spaces; a trailing space means the cursor is on a new, empty word). Returns the sorted
 * candidates per case.
 */
async function bashComplete(cases: string[]): Promise<string[][]> {
  const program = [
    `source ${JSON.stringify(join(box.cwd, 'onceq.bash'))}`,
    ...cases.map((line) => {
      const words = line.split(' ');
      const quoted = words.map((w) => `'${w}'`).join(' ');
      return [
        `COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; COMPREPLY=()`,
        `COMP_LINE='${line}'; COMP_POINT=${line.length}`,
        `_onceq onceq "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"`,
        `printf '%s\\n' "\${COMPREPLY[@]}" | sort; echo '---'`,
      ].join('\n');
    }),
  ].join('\n');
  const r = await runProcess(['bash', '--noprofile', '--norc', '-c', program], { cwd: box.cwd });
  if (r.code !== 0) throw new Error(`bash exited ${r.code}: ${r.stderr}`);
  expect(r.stderr).toBe('');
  const blocks = r.stdout.split('---\n');
  blocks.pop();
  return blocks.map((b) => b.split('\n').filter((l) => l !== ''));
}

describe('bash: the completion function completes commands, flags and files', () => {
  test('command names: wo → work worker; an empty word → every command and the global flags', async () => {
    const [wo, all, st] = await bashComplete(['onceq wo', 'onceq ', 'onceq st']);
    expect(wo).toEqual(['work', 'worker']);
    expect(all).toEqual([...COMMAND_NAMES, '--help', '--version'].sort());
    expect(st).toEqual(['status']);
  });

  test('every command completes exactly its own flags and the global ones (from the registry)', async () => {
    const replies = await bashComplete(commands.map((c) => `onceq ${c.name} --`));
    const expected = commands.map(flagsOf);
    expect(replies).toEqual(expected);
    // Sanity: the registry really differs per command, so this compares something.
    expect(replies[COMMAND_NAMES.indexOf('status')]).toEqual([
      '--db',
      '--help',
      '--json',
      '--now',
      '--queue',
      '--version',
    ]);
    expect(replies[COMMAND_NAMES.indexOf('enqueue')]).toContain('--split');
  });

  test('a flag prefix narrows (enqueue --sp → --split), flags after other words too', async () => {
    const [split, late, none] = await bashComplete([
      'onceq enqueue --sp',
      'onceq --db x.db list --li',
      'onceq status --nosuchflag',
    ]);
    expect(split).toEqual(['--split']);
    expect(late).toEqual(['--limit']);
    expect(none).toEqual([]);
  });

  test('global flags before the command: their values are not taken for the command', async () => {
    const [wo, afterDb, dbValue] = await bashComplete([
      'onceq --now 5 wo',
      'onceq --json --db x.db ',
      'onceq --db onceq.b',
    ]);
    expect(wo).toEqual(['work', 'worker']);
    expect(afterDb).toEqual([...COMMAND_NAMES, '--help', '--version'].sort());
    expect(dbValue).toEqual(['onceq.bash']);
  });

  test('a word that is not a flag completes file names', async () => {
    writeFileSync(join(box.cwd, 'events-2026.jsonl'), '');
    const [files] = await bashComplete(['onceq enqueue events-']);
    expect(files).toEqual(['events-2026.jsonl']);
  });
});

describe('zsh and fish: every command with its flags from the registry', () => {
  test('zsh: one case per command listing exactly its flags', () => {
    for (const command of commands) {
      const line = scripts.zsh?.split('\n').find((l) => l.startsWith(`    ${command.name}) `));
      expect(line).toBeDefined();
      const listed = /flags=\(([^)]*)\)/.exec(line as string)?.[1]?.split(' ') ?? [];
      expect([command.name, ...listed.sort()]).toEqual([command.name, ...flagsOf(command)]);
    }
  });

  test('fish: one -l per flag of each command', () => {
    for (const command of commands) {
      const line = scripts.fish
        ?.split('\n')
        .find((l) => l.includes(`__fish_seen_subcommand_from ${command.name}'`));
      expect(line).toBeDefined();
      const listed = [...(line as string).matchAll(/ -l (\S+)/g)].map((m) => `--${m[1]}`).sort();
      expect([command.name, ...listed]).toEqual([command.name, ...flagsOf(command)]);
    }
  });

  // Parsed by the real shells only where they are installed (they are not on the CI
  // image this was written on: these two then show as skipped, not passed).
  test.skipIf(Bun.which('zsh') === null)('zsh -n parses the zsh script', async () => {
    const r = await runProcess(['zsh', '-n', join(box.cwd, 'onceq.zsh')], { cwd: box.cwd });
    expect([r.code, r.stderr]).toEqual([0, '']);
  });
  test.skipIf(Bun.which('fish') === null)('fish -n parses the fish script', async () => {
    const r = await runProcess(['fish', '-n', join(box.cwd, 'onceq.fish')], { cwd: box.cwd });
    expect([r.code, r.stderr]).toEqual([0, '']);
  });
});
