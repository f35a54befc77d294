import type { Prompter } from './setup/prompter.ts';

/**
 * Everything a command touches outside its arguments: streams, environment, terminal
 * facts and the prompter. `bin.ts` builds the real one ({@link processContext}); tests
 * build their own, so no command reads `process` directly.
 */
export interface Context {
  /** Directory relative paths (batch files, the store, the config file) resolve against. */
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Writes one line to stdout. */
  out(line: string): void;
  /** Writes one line to stderr. */
  err(line: string): void;
  /** All of stdin, for `enqueue -`. */
  readStdin(): Promise<Uint8Array>;
  /** Resolves on the next line of stdin, or at its end (for `claim --hold`). */
  waitForLine(): Promise<void>;
  /** Progress for people (a spinner or counter) on stderr; null when stderr is not a terminal. */
  readonly progress: Progress | null;
  /** Prompts are possible: stdin and stdout are terminals and `CI` is not set. */
  readonly interactive: boolean;
  /** stdin is a terminal (`enqueue -` then says how to end the input). Default false. */
  readonly stdinIsTerminal?: boolean;
  /**
   * Runs `handler` on Ctrl-C (SIGINT) instead of dying silently; the handler says what
   * happened and the process exits 130. Returns a function that removes the handler.
   */
  onInterrupt?(handler: () => void): () => void;
  /** The interactive prompter (loads @clack/prompts on first use). */
  prompter(): Promise<Prompter>;
}

/** A one-line status that rewrites itself on a terminal. */
export interface Progress {
  update(text: string): void;
  /** Erases the line. */
  done(): void;
}

/**
 * The context of the running process. Lines go out through `console.log` /
 * `console.error`: Bun writes those straight to the file descriptors, in call order, and
 * a reader that goes away (`onceq list | head -1`) ends the output quietly instead of
 * raising EPIPE. `process.stdout`, `process.stderr` and `process.stdin` are Node stream
 * objects that cost a noticeable part of start-up to create, so they are touched only when a
 * command needs a terminal fact (the getters below) or Ctrl-C handling.
 */
export function processContext(): Context {
  const env = process.env;
  let progress: Progress | null | undefined;
  return {
    cwd: process.cwd(),
    env,
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    readStdin: async () => new Uint8Array(await Bun.stdin.arrayBuffer()),
    waitForLine,
    get progress() {
      progress ??= process.stderr.isTTY ? terminalProgress(process.stderr) : null;
      return progress;
    },
    get interactive() {
      return Boolean(process.stdin.isTTY && process.stdout.isTTY && !env.CI);
    },
    get stdinIsTerminal() {
      return Boolean(process.stdin.isTTY);
    },
    onInterrupt: (handler) => {
      const listener = () => {
        handler();
        // The open transaction dies with the process: SQLite and PostgreSQL roll it back.
        // Exit once stderr has taken the handler's words: a pipe may not have flushed yet.
        process.stderr.write('', () => process.exit(130));
      };
      process.on('SIGINT', listener);
      return () => process.off('SIGINT', listener);
    },
    prompter: async () => (await import('./setup/clack.ts')).clackPrompter(),
  };
}

function waitForLine(): Promise<void> {
  return new Promise((resolve) => {
    const stdin = process.stdin;
    const finish = () => {
      stdin.off('data', onData);
      stdin.off('end', finish);
      stdin.off('close', finish);
      stdin.pause();
      resolve();
    };
    const onData = (chunk: Buffer) => {
      if (chunk.includes(10)) finish();
    };
    stdin.on('data', onData);
    stdin.on('end', finish);
    stdin.on('close', finish);
    stdin.resume();
  });
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** A spinner + text on one terminal line, redrawn at most every 80 ms. */
export function terminalProgress(stream: { write(text: string): unknown }): Progress {
  let frame = 0;
  let last = 0;
  let shown = false;
  return {
    update(text) {
      const now = Date.now();
      if (shown && now - last < 80) return;
      last = now;
      shown = true;
      frame = (frame + 1) % FRAMES.length;
      stream.write(`\r\x1b[2K${FRAMES[frame]} ${text}`);
    },
    done() {
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
    },
  };
}
