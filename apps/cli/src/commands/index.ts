import type { AnyCommand } from '../command.ts';
import { claimCommand } from './claim.ts';
import { completeCommand } from './complete.ts';
import { completionCommand } from './completion.ts';
import { demoCommand } from './demo.ts';
import { dlqCommand } from './dlq.ts';
import { enqueueCommand } from './enqueue.ts';
import { failCommand } from './fail.ts';
import { listCommand } from './list.ts';
import { redriveCommand } from './redrive.ts';
import { setupCommand } from './setup.ts';
import { showCommand } from './show.ts';
import { statusCommand } from './status.ts';
import { workCommand } from './work.ts';

/** Every command, in the order `onceq --help` lists them (README, "CLI reference"). */
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
  listCommand,
  redriveCommand,
  demoCommand,
  completionCommand,
];

export function findCommand(name: string): AnyCommand | undefined {
  return COMMANDS.find((c) => c.name === name);
}
