import type { AnyCommand } from '../command.ts';
import { claimCommand } from './claim.ts';
import { completeCommand } from './complete.ts';
import { consoleCommand } from './console.ts';
import { demoCommand } from './demo.ts';
import { dlqCommand } from './dlq.ts';
import { enqueueCommand } from './enqueue.ts';
import { failCommand } from './fail.ts';
import { redriveCommand } from './redrive.ts';
import { setupCommand } from './setup.ts';
import { showCommand } from './show.ts';
import { statusCommand } from './status.ts';
import { workCommand } from './work.ts';

/** Every command, in the order `onceq --help` lists them (SPEC §7). */
export const COMMANDS: readonly AnyCommand[] = [
  setupCommand,
  enqueueCommand,
  workCommand,
  claimCommand,
  completeCommand,
  failCommand,
  statusCommand,
  showCommand,
  dlqCommand,
  redriveCommand,
  consoleCommand,
  demoCommand,
];

export function findCommand(name: string): AnyCommand | undefined {
  return COMMANDS.find((c) => c.name === name);
}
