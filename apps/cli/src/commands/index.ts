import type { AnyCommand } from '../command.ts';

/**
 * Every command name, in the order `onceq --help` lists them (and docs/cli.md).
 * The names are known without loading any command: "did you mean …?" needs no module.
 */
export const COMMAND_NAMES = [
  'setup',
  'enqueue',
  'work',
  'worker',
  'claim',
  'complete',
  'fail',
  'extend',
  'status',
  'show',
  'dlq',
  'list',
  'redrive',
  'deliver',
  'deliveries',
  'serve',
  'skip',
  'console',
  'demo',
  'id-policy',
  'prune',
  'doctor',
  'backup',
  'completion',
  'docs',
] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];

/**
 * How to load each command. A dynamic `import()` per command, so a run loads only the
 * module of the command it runs and what that module imports: `onceq status` never
 * evaluates zod, @clack/prompts, prom-client, pg or the console: start-up time is
 * what a short command costs. In the compiled binary each becomes a chunk of its own (`--splitting`).
 */
const LOADERS: Record<CommandName, () => Promise<AnyCommand>> = {
  setup: async () => (await import('./setup.ts')).setupCommand,
  enqueue: async () => (await import('./enqueue.ts')).enqueueCommand,
  work: async () => (await import('./work.ts')).workCommand,
  worker: async () => (await import('./worker.ts')).workerCommand,
  claim: async () => (await import('./claim.ts')).claimCommand,
  complete: async () => (await import('./complete.ts')).completeCommand,
  fail: async () => (await import('./fail.ts')).failCommand,
  extend: async () => (await import('./extend.ts')).extendCommand,
  status: async () => (await import('./status.ts')).statusCommand,
  show: async () => (await import('./show.ts')).showCommand,
  dlq: async () => (await import('./dlq.ts')).dlqCommand,
  list: async () => (await import('./list.ts')).listCommand,
  redrive: async () => (await import('./redrive.ts')).redriveCommand,
  deliver: async () => (await import('./deliver.ts')).deliverCommand,
  deliveries: async () => (await import('./deliveries.ts')).deliveriesCommand,
  serve: async () => (await import('./serve.ts')).serveCommand,
  skip: async () => (await import('./skip.ts')).skipCommand,
  console: async () => (await import('./console.ts')).consoleCommand,
  demo: async () => (await import('./demo.ts')).demoCommand,
  'id-policy': async () => (await import('./id-policy.ts')).idPolicyCommand,
  prune: async () => (await import('./prune.ts')).pruneCommand,
  doctor: async () => (await import('./doctor.ts')).doctorCommand,
  backup: async () => (await import('./backup.ts')).backupCommand,
  completion: async () => (await import('./completion.ts')).completionCommand,
  docs: async () => (await import('./docs.ts')).docsCommand,
};

function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}

/** The command called `name`, loaded, or undefined when there is none. */
export async function loadCommand(name: string): Promise<AnyCommand | undefined> {
  return isCommandName(name) ? LOADERS[name]() : undefined;
}

/** Every command, loaded, in {@link COMMAND_NAMES} order: for help and completion only. */
export async function loadCommands(): Promise<AnyCommand[]> {
  return Promise.all(COMMAND_NAMES.map((name) => LOADERS[name]()));
}
