/**
 * The CPU time a local PostgreSQL server has spent, every process of it: the
 * postmaster's own and what it has reaped from backends that ended (Linux
 * /proc/<pid>/stat: utime, stime, cutime, cstime), plus the running children's
 * (backends, WAL writer, checkpointer, autovacuum). The difference of two readings is
 * the server work of what ran in between, backends that came and went included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { runChildren } from './spawn.ts';
import type { ChildResult } from './worker-child.ts';

/** `getconf CLK_TCK`: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** Fields after the command name (which may hold spaces), from the state field on. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The reader of one server's CPU ms, or null when the server is not a process of this machine. */
export async function serverCpuReader(url: string): Promise<(() => number) | null> {
  const client = new pg.Client({ connectionString: url, application_name: 'onceq-bench-cpu' });
  await client.connect();
  let parent: string[] | null;
  try {
    // Read while the backend lives: its parent is the postmaster.
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    parent = statFields(Number(rows[0]?.pid));
  } finally {
    await client.end();
  }
  if (parent === null) return null;
  const postmaster = Number(parent[1]);
  if (statFields(postmaster) === null) return null;
  return () => {
    const own = statFields(postmaster);
    if (own === null) return Number.NaN;
    // utime, stime, cutime, cstime are fields 14–17 of the line (11–14 here).
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const fields = statFields(Number(entry));
      if (fields === null || Number(fields[1]) !== postmaster) continue;
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    return (ticks * 1000) / CLOCK_TICKS;
  };
}

/**
 * {@link runChildren} with the server's CPU ms from the children's release to their end
 * (their backends reaped: a backend's CPU reaches the postmaster when it is reaped);
 * null without a reader (SQLite, or a server on another machine).
 */
export async function runChildrenMetered(
  specs: readonly object[],
  script: string | undefined,
  serverCpu: (() => number) | null,
): Promise<{ results: ChildResult[]; serverCpuMs: number | null }> {
  let atGo = Number.NaN;
  const results = await runChildren(specs, script, () => {
    atGo = serverCpu?.() ?? Number.NaN;
  });
  if (serverCpu === null) return { results, serverCpuMs: null };
  await Bun.sleep(200);
  return { results, serverCpuMs: serverCpu() - atGo };
}
