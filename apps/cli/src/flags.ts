import type { ParseArgsOptionsConfig } from 'node:util';

/**
 * One flag, declared once: parsing (`util.parseArgs`), the `--help` row, shell completion
 * and the CLI reference in docs/cli.md are all derived from it.
 */
export interface FlagSpec {
  type: 'string' | 'boolean';
  /** The value's placeholder in help and in the synopsis: `N` prints `--max <N>`. */
  value?: string;
  /** One line for `--help` and the CLI reference. */
  help: string;
  /** A one-letter alias: `y` accepts `-y` for `--yes`. */
  short?: string;
  /** Shown in the synopsis without brackets; the command's `parse` enforces it. */
  required?: boolean;
  /** A switch whose `--no-NAME` form is worth naming in help (every switch accepts it). */
  negatable?: boolean;
}

/** A command's (or the global) flags, by long name without the dashes. */
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The `util.parseArgs` options of a set of flags. */
export function parseOptions(flags: FlagSpecs): ParseArgsOptionsConfig {
  const options: ParseArgsOptionsConfig = {};
  for (const [name, spec] of Object.entries(flags)) {
    options[name] =
      spec.short === undefined ? { type: spec.type } : { type: spec.type, short: spec.short };
  }
  return options;
}

/** `-y, --yes`, `--max <N>`, `--sample, --no-sample`: how help and the docs name a flag. */
export function flagLabel(name: string, spec: FlagSpec): string {
  const long = spec.value === undefined ? `--${name}` : `--${name} <${spec.value}>`;
  const withShort = spec.short === undefined ? long : `-${spec.short}, ${long}`;
  return spec.negatable === true ? `${withShort}, --no-${name}` : withShort;
}

/** The `[flag, description]` rows of help, in declaration order. */
export function flagRows(flags: FlagSpecs): [string, string][] {
  return Object.entries(flags).map(([name, spec]) => [flagLabel(name, spec), spec.help]);
}

/** Every spelling a shell may complete: `--max`, and `--no-sample` for a negatable switch. */
export function flagWords(flags: FlagSpecs): string[] {
  return Object.entries(flags).flatMap(([name, spec]) =>
    spec.negatable === true ? [`--${name}`, `--no-${name}`] : [`--${name}`],
  );
}

/** The long flags that take a value: the word after one of them is its value. */
export function valueFlags(flags: FlagSpecs): string[] {
  return Object.entries(flags)
    .filter(([, spec]) => spec.type === 'string')
    .map(([name]) => `--${name}`);
}
