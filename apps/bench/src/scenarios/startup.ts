/**
 * Start-up time of a read command: `onceq status` on a small SQLite store (the demo's
 * five events, worked), as a person or a shell loop feels it. Measured for the compiled
 * binary (`bun run build`), the source through `bun`, and `sqlite3` answering the same
 * question (counts by state), each as a fresh process, wall time from spawn to exit, next
 * to the floor: a compiled bun binary that only prints one line.
 */
import { join } from 'node:path';
import { type Spread, spread } from '../util.ts';

export interface StartupResult {
  /** Label → wall and CPU time per process, ms. */
  rows: { what: string; ms: Timing }[];
  /** The compiled binary's `status`, the one the target is about. */
  binaryStatusMs: Timing;
  /** A compiled bun binary that only prints: what any bun program pays to start. */
  floorMs: Timing;
  /** `sqlite3` answering the same question, when installed. */
  sqliteMs: Timing | null;
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

export interface Timing {
  wall: Spread;
  cpu: Spread;
}

/**
 * Wall time, and CPU time (what a busy shared machine disturbs least), per process. The
 * commands run round-robin (a, b, c, a, b, c, …) so that a load change on the shared
 * machine hits all of them alike and their ratios stay fair.
 */
async function timeInterleaved(
  cmds: readonly string[][],
  cwd: string,
  repeats: number,
): Promise<Timing[]> {
  for (const cmd of cmds) await run(cmd, cwd); // warm the page cache once
  const wall: number[][] = cmds.map(() => []);
  const cpu: number[][] = cmds.map(() => []);
  for (let i = 0; i < repeats; i++) {
    for (const [j, cmd] of cmds.entries()) {
      const started = performance.now();
      cpu[j]?.push(await run(cmd, cwd));
      wall[j]?.push(performance.now() - started);
    }
  }
  return cmds.map((_, j) => ({ wall: spread(wall[j] ?? []), cpu: spread(cpu[j] ?? []) }));
}

export async function runStartup(
  root: string,
  scratch: string,
  repeats: number,
): Promise<StartupResult> {
  const bin = join(scratch, 'onceq');
  await run(['bash', join(root, 'scripts', 'build.sh'), bin], root);
  // The floor: a compiled binary of the same bun that prints one line and exits.
  const floorSource = join(scratch, 'hello.ts');
  const floor = join(scratch, 'hello');
  await Bun.write(floorSource, 'console.log("hello");\n');
  await run(
    ['bun', 'build', '--compile', '--minify', '--bytecode', floorSource, '--outfile', floor],
    scratch,
  );
  const db = join(scratch, 'startup.db');
  await run([bin, 'enqueue', join(root, 'examples', 'demo.jsonl'), '--db', db], scratch);
  await run([bin, 'work', '--db', db], scratch);
  const source = join(root, 'apps', 'cli', 'src', 'bin.ts');
  const cmds: { what: string; cmd: string[] }[] = [
    { what: 'onceq status (compiled binary)', cmd: [bin, 'status', '--db', db] },
    { what: 'onceq status --json (compiled binary)', cmd: [bin, 'status', '--json', '--db', db] },
    { what: 'onceq --version (compiled binary)', cmd: [bin, '--version'] },
    {
      what: 'bun apps/cli/src/bin.ts status (source)',
      cmd: [process.execPath, source, 'status', '--db', db],
    },
    { what: 'a compiled bun binary printing one line (the floor)', cmd: [floor] },
  ];
  if (Bun.which('sqlite3') !== null) {
    cmds.push({
      what: 'sqlite3 (counts by state, same store)',
      cmd: ['sqlite3', db, 'select state, count(*) from messages group by state'],
    });
  }
  const timings = await timeInterleaved(
    cmds.map((c) => c.cmd),
    scratch,
    repeats,
  );
  const rows = cmds.map((c, j) => ({ what: c.what, ms: timings[j] as Timing }));
  const sqlite = Bun.which('sqlite3') === null ? null : (timings[cmds.length - 1] as Timing);
  return {
    rows,
    binaryStatusMs: timings[0] as Timing,
    floorMs: timings[4] as Timing,
    sqliteMs: sqlite,
  };
}
