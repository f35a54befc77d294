/**
 * Start-up time of a read command: `onceq status` on a small SQLite store (the demo's
 * five events, worked), as a person or a shell loop feels it. Measured for the compiled
 * binary (`bun run build`), the source through `bun`, and `sqlite3` answering the same
 * question (counts by state), each as a fresh process, wall time from spawn to exit.
 */
import { join } from 'node:path';
import { type Spread, spread } from '../util.ts';

export interface StartupResult {
  /** Label → wall and CPU time per process, ms. */
  rows: { what: string; ms: Timing }[];
  /** The compiled binary's `status`, the one the target is about. */
  binaryStatusMs: Timing;
}

/** Runs `cmd` to exit; resolves to its CPU time (user + system), ms. */
async function run(cmd: string[], cwd: string): Promise<number> {
  const proc = Bun.spawn(cmd, { cwd, stdout: 'ignore', stderr: 'pipe', env: { ...process.env } });
  const code = await proc.exited;
  if (code !== 0) {
    throw new Error(`${cmd.join(' ')} exited ${code}: ${await new Response(proc.stderr).text()}`);
  }
  const usage = proc.resourceUsage();
  return usage === undefined ? Number.NaN : Number(usage.cpuTime.total) / 1000;
}

/** Wall time, and CPU time (what a busy shared machine disturbs least), per process. */
async function time(cmd: string[], cwd: string, repeats: number): Promise<Timing> {
  await run(cmd, cwd); // warm the page cache once
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const started = performance.now();
    cpu.push(await run(cmd, cwd));
    wall.push(performance.now() - started);
  }
  return { wall: spread(wall), cpu: spread(cpu) };
}

export interface Timing {
  wall: Spread;
  cpu: Spread;
}

export async function runStartup(
  root: string,
  scratch: string,
  repeats: number,
): Promise<StartupResult> {
  const bin = join(scratch, 'onceq');
  await run(['bash', join(root, 'scripts', 'build.sh'), bin], root);
  const db = join(scratch, 'startup.db');
  await run([bin, 'enqueue', join(root, 'examples', 'demo.jsonl'), '--db', db], scratch);
  await run([bin, 'work', '--db', db], scratch);
  const source = join(root, 'apps', 'cli', 'src', 'bin.ts');
  const rows: { what: string; ms: Timing }[] = [];
  const binaryStatusMs = await time([bin, 'status', '--db', db], scratch, repeats);
  rows.push({ what: 'onceq status (compiled binary)', ms: binaryStatusMs });
  rows.push({
    what: 'onceq status --json (compiled binary)',
    ms: await time([bin, 'status', '--json', '--db', db], scratch, repeats),
  });
  rows.push({
    what: 'onceq --version (compiled binary)',
    ms: await time([bin, '--version'], scratch, repeats),
  });
  rows.push({
    what: 'bun apps/cli/src/bin.ts status (source)',
    ms: await time([process.execPath, source, 'status', '--db', db], scratch, repeats),
  });
  if (Bun.which('sqlite3') !== null) {
    rows.push({
      what: 'sqlite3 (counts by state, same store)',
      ms: await time(
        ['sqlite3', db, 'select state, count(*) from messages group by state'],
        scratch,
        repeats,
      ),
    });
  }
  return { rows, binaryStatusMs };
}
