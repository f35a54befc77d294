/**
 * The prompts and progress `onceq setup` uses, injected so tests can answer them with a
 * fake. Prompt methods reject with `CancelledError` when the user cancels (Ctrl-C/Esc).
 * Only `clack.ts` implements it with @clack/prompts.
 */
export interface Prompter {
  intro(title: string): void;
  text(options: {
    message: string;
    placeholder?: string;
    defaultValue?: string;
    validate?: (value: string) => string | undefined;
  }): Promise<string>;
  select<T extends string>(options: {
    message: string;
    options: { value: T; label: string; hint?: string }[];
    initialValue?: T;
  }): Promise<T>;
  confirm(options: { message: string; initialValue?: boolean }): Promise<boolean>;
  spinner(): Spinner;
  /** A boxed block of lines (the status table). */
  note(message: string, title?: string): void;
  info(message: string): void;
  warn(message: string): void;
  outro(message: string): void;
  cancel(message: string): void;
}

export interface Spinner {
  start(message: string): void;
  stop(message: string): void;
  error(message: string): void;
}

/**
 * The reporter of a run without prompts (`--yes`, or every answer given by a flag): the
 * same steps as plain lines on stdout, or nothing at all with `--json`. Its prompt methods
 * must never be reached.
 */
export function plainPrompter(
  ctx: { out(line: string): void; err(line: string): void },
  quiet: boolean,
): Prompter {
  const out = quiet ? () => {} : (line: string) => ctx.out(line);
  const noPrompt = (): never => {
    throw new Error('setup tried to prompt without a terminal');
  };
  return {
    intro: (title) => out(title),
    text: async () => noPrompt(),
    select: async () => noPrompt(),
    confirm: async () => noPrompt(),
    spinner: () => ({
      start: () => {},
      stop: (message) => out(message),
      error: (message) => ctx.err(message),
    }),
    note: (message, title) => {
      if (title !== undefined) out(`${title}:`);
      for (const line of message.split('\n')) out(line === '' ? '' : `  ${line}`);
    },
    info: (message) => out(message),
    warn: (message) => ctx.err(`warning: ${message}`),
    outro: (message) => out(message),
    cancel: (message) => ctx.err(message),
  };
}
