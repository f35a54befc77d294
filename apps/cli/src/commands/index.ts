import type { AnyCommand } from '../command.ts';
import { backupCommand } from './backup.ts';
import { claimCommand } from './claim.ts';
import { completeCommand } from './complete.ts';
import { completionCommand } from './completion.ts';
import { consoleCommand } from './console.ts';
import { demoCommand } from './demo.ts';
import { dlqCommand } from './dlq.ts';
import { doctorCommand } from './doctor.ts';
import { enqueueCommand } from './enqueue.ts';
import { extendCommand } from './extend.ts';
import { failCommand } from './fail.ts';
import { idPolicyCommand } from './id-policy.ts';
import { listCommand } from './list.ts';
import { pruneCommand } from './prune.ts';
import { redriveCommand } from './redrive.ts';
import { setupCommand } from './setup.ts';
import { showCommand } from './show.ts';
import { statusCommand } from './status.ts';
import { workCommand } from './work.ts';
import { workerCommand } from './worker.ts';

/** Every command, in the order `onceq --help` lists them (README, "CLI reference"). */
export const COMMANDS: readonly AnyCommand[] = [
  setupCommand,
  enqueueCommand,
  workCommand,
  workerCommand,
  claimCommand,
  completeCommand,
  failCommand,
  extendCommand,
  statusCommand,
  showCommand,
  dlqCommand,
  listCommand,
  redriveCommand,
  consoleCommand,
  demoCommand,
  idPolicyCommand,
  pruneCommand,
  doctorCommand,
  backupCommand,
  completionCommand,
];

export function findCommand(name: string): AnyCommand | undefined {
  return COMMANDS.find((c) => c.name === name);
}
