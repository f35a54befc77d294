/**
 * Prints each failed test of a bun junit report with the start of its message, so the
 * end of a long run (all a CI log may keep) says why a test failed, not only which.
 * Usage: bun scripts/junit-failures.ts REPORT.xml
 */
import { readFileSync } from 'node:fs';

const MESSAGE_CHARS = 3_000;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** The XML entities bun writes in attribute values and text. */
export function unescapeXml(text: string): string {
  return text.replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, (whole, name: string) => {
    if (name.startsWith('#x')) return String.fromCodePoint(Number.parseInt(name.slice(2), 16));
    if (name.startsWith('#')) return String.fromCodePoint(Number(name.slice(1)));
    return ENTITIES[name] ?? whole;
  });
}

export interface Failure {
  where: string;
  name: string;
  message: string;
}

/** The failed test cases of a report, in report order. */
export function failures(xml: string): Failure[] {
  const found: Failure[] = [];
  for (const testcase of xml.matchAll(/<testcase\b([^>]*[^/>])>([\s\S]*?)<\/testcase>/g)) {
    const failure = /<failure\b[^>]*>([\s\S]*?)<\/failure>/.exec(testcase[2] ?? '');
    if (failure === null) continue;
    const attrs = testcase[1] ?? '';
    const attr = (key: string) =>
      unescapeXml(new RegExp(` ${key}="([^"]*)"`).exec(attrs)?.[1] ?? '');
    found.push({
      where: `${attr('file')}:${attr('line')}`,
      name: attr('name'),
      message: unescapeXml(failure[1] ?? '').trimEnd(),
    });
  }
  return found;
}

if (import.meta.main) {
  const path = process.argv[2];
  if (path === undefined) {
    console.error('usage: bun scripts/junit-failures.ts REPORT.xml');
    process.exit(2);
  }
  for (const f of failures(readFileSync(path, 'utf8'))) {
    const message =
      f.message.length > MESSAGE_CHARS ? `${f.message.slice(0, MESSAGE_CHARS)}\n…` : f.message;
    console.log(`\n== failed: ${f.name} (${f.where})\n${message}`);
  }
}
