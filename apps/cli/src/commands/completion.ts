import { GLOBAL_FLAGS } from '../args.ts';
import { type AnyCommand, defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { flagWords, valueFlags } from '../flags.ts';
import { loadCommands } from './index.ts';

const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

export const completionCommand = defineCommand<Shell>({
  name: 'completion',
  summary: 'print a shell completion script (bash, zsh or fish) for commands and flags',
  operands: { synopsis: 'bash|zsh|fish', help: [['bash|zsh|fish', 'the shell to complete for']] },
  flags: {},
  opensStore: false,
  examples: [
    'completion bash > ~/.local/share/bash-completion/completions/onceq',
    'completion fish > ~/.config/fish/completions/onceq.fish',
  ],
  parse({ positionals }) {
    const shell = positionals[0];
    if (positionals.length !== 1 || !SHELLS.includes(shell as Shell)) {
      throw new UsageError(`completion needs one shell: ${SHELLS.join(', ')}`);
    }
    return shell as Shell;
  },
  async run(shell, { ctx }) {
    // Built from the registry at run time: every command and flag, including new ones.
    ctx.out(SCRIPTS[shell](await loadCommands()));
    return 0;
  },
});

/** Global flags that take a value: the word after them is not the command. */
const VALUE_FLAGS = valueFlags(GLOBAL_FLAGS);

function globalFlags(): string[] {
  return flagWords(GLOBAL_FLAGS);
}

function flagsOf(command: AnyCommand): string[] {
  return [...new Set([...flagWords(GLOBAL_FLAGS), ...flagWords(command.flags)])];
}

const SCRIPTS: Record<Shell, (commands: readonly AnyCommand[]) => string> = {
  bash: (commands) => {
    const cases = commands
      .map((c) => `    ${c.name}) flags="${flagsOf(c).join(' ')}" ;;`)
      .join('\n');
    return `# onceq completion for bash: source it, or save it as
# ~/.local/share/bash-completion/completions/onceq
_onceq() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" flags="" command="" i
  # The command is the first bare word: global flags may stand before it.
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      ${VALUE_FLAGS.join('|')}) ((i++)) ;;
      -*) ;;
      *) command="\${COMP_WORDS[i]}"; break ;;
    esac
  done
  if [ -z "$command" ] && [[ "$cur" != -* ]] && [[ "\${COMP_WORDS[COMP_CWORD-1]}" != --db ]]; then
    COMPREPLY=($(compgen -W "${commands.map((c) => c.name).join(' ')} --help --version" -- "$cur"))
    return
  fi
  case "$command" in
${cases}
    *) flags="${globalFlags().join(' ')}" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _onceq onceq`;
  },
  zsh: (commands) => {
    const names = commands.map((c) => `'${c.name}:${c.summary.replace(/'/g, '')}'`).join(' ');
    const cases = commands
      .map((c) => `    ${c.name}) flags=(${flagsOf(c).join(' ')}) ;;`)
      .join('\n');
    return `#compdef onceq
# onceq completion for zsh: save it as _onceq in a directory of $fpath
_onceq() {
  local -a commands flags
  commands=(${names})
  local command="" i
  # The command is the first bare word: global flags may stand before it.
  for ((i = 2; i < CURRENT; i++)); do
    case $words[i] in
      ${VALUE_FLAGS.join('|')}) ((i++)) ;;
      -*) ;;
      *) command=$words[i]; break ;;
    esac
  done
  if [[ -z $command && $PREFIX != -* && $words[CURRENT-1] != --db ]]; then
    _describe 'onceq command' commands
    return
  fi
  case $command in
${cases}
    *) flags=(${globalFlags().join(' ')}) ;;
  esac
  if [[ $PREFIX == -* ]]; then
    compadd -- $flags
  else
    _files
  fi
}
compdef _onceq onceq`;
  },
  fish: (commands) => {
    const lines = [
      '# onceq completion for fish: save it as ~/.config/fish/completions/onceq.fish',
      'complete -c onceq -f',
    ];
    for (const c of commands) {
      lines.push(
        `complete -c onceq -n __fish_use_subcommand -a ${c.name} -d '${c.summary.replace(/'/g, '')}'`,
      );
      const long = flagsOf(c).map((f) => `-l ${f.slice(2)}`);
      lines.push(
        `complete -c onceq -n '__fish_seen_subcommand_from ${c.name}' -F ${long.join(' ')}`,
      );
    }
    return lines.join('\n');
  },
};
