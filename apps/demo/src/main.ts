#!/usr/bin/env bun
/**
 * `bun run demo [--json] [--db <path|postgres://…>]`: runs {@link runDemo} and exits
 * with its code (0 when every figure of docs/protocol.md §6 matches).
 */
import { runDemo } from './index.ts';

const USAGE = 'usage: bun run demo [--json] [--db <new path|postgres://…>]';

function parse(args: string[]): { json: boolean; db?: string } | string {
  let json = false;
  let db: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--json') json = true;
    else if (arg === '--db') {
      db = args[++i];
      if (db === undefined || db.startsWith('--')) return '--db needs a path or a postgres:// URL.';
    } else if (arg.startsWith('--db=')) db = arg.slice('--db='.length);
    else if (arg === '--help' || arg === '-h') return '';
    else return `unknown argument ${arg}.`;
  }
  return db === undefined ? { json } : { json, db };
}

const parsed = parse(Bun.argv.slice(2));
if (typeof parsed === 'string') {
  if (parsed === '') {
    console.log(USAGE);
    process.exit(0);
  }
  console.error(`${parsed} ${USAGE}`);
  process.exit(2);
}
process.exit(await runDemo(parsed));
