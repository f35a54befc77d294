/**
 * What a local PostgreSQL server has done, every process of it: the postmaster's own
 * and what it has reaped from backends that ended, plus the running children's
 * (backends, WAL writer, checkpointer, autovacuum). CPU time comes from
 * /proc/<pid>/stat (utime, stime, cutime, cstime), bytes read from /proc/<pid>/io
 * (`rchar`: the pages read into shared buffers from the operating system's cache or
 * disk). The difference of two readings is the server work of what ran in between,
 * backends that came and went included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { runChildren } from './spawn.ts';
import { ioBytes, per } from './util.ts';
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

/** The postmaster of the server at `url`, or null when it is not a process of this machine. */
async function postmasterOf(url: string): Promise<number | null> {
  const client = new pg.Client({ connectionString: url, application_name: 'onceq-bench-meter' });
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
  return statFields(postmaster) === null ? null : postmaster;
}

/** The running children of `postmaster` with their stat fields. */
function children(postmaster: number): { pid: number; fields: string[] }[] {
  const out: { pid: number; fields: string[] }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields !== null && Number(fields[1]) === postmaster)
      out.push({ pid: Number(entry), fields });
  }
  return out;
}

/** The reader of one server's CPU ms, or null when the server is not a process of this machine. */
export async function serverCpuReader(url: string): Promise<(() => number) | null> {
  const postmaster = await postmasterOf(url);
  if (postmaster === null) return null;
  return () => {
    const own = statFields(postmaster);
    if (own === null) return Number.NaN;
    // utime, stime, cutime, cstime are fields 14–17 of the line (11–14 here).
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const { fields } of children(postmaster)) ticks += Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / CLOCK_TICKS;
  };
}

/**
 * The reader of the bytes one server has read, or null when its processes' `io` cannot
 * be read (another machine, or another user without the right to trace them). A
 * reaped backend's reads reach the postmaster's `io` as its CPU reaches `cutime`.
 */
export async function serverReadReader(url: string): Promise<(() => number) | null> {
  const postmaster = await postmasterOf(url);
  if (postmaster === null || ioBytes(postmaster) === null) return null;
  return () => {
    let read = ioBytes(postmaster)?.read ?? Number.NaN;
    // A child that ends between the listing and its read has reached the postmaster.
    for (const { pid } of children(postmaster)) read += ioBytes(pid)?.read ?? 0;
    return read;
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

/** The server's CPU `ms` spread over `done` messages, µs each; null when either is missing. */
export function serverCpuUsPer(ms: number | null, done: number): number | null {
  const msEach = per(ms, done);
  return msEach === null ? null : msEach * 1000;
}
