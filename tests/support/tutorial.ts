/**
 * Runs the tutorial as a reader would: every ```sh block of docs/tutorial.md, in order,
 * in one bash session per section (so an `export ONCEQ_DB=…` carries on), with `onceq`
 * being the real CLI. A ```sh block followed directly by a plain ``` block must print
 * that block (stdout and stderr together, as a terminal shows them). Other fences
 * (```console, ```ts, ```ini) are read, not run: they need a second terminal, a server
 * or an edit to the code.
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BIN } from './cli.ts';
import { runProcess } from './spawn.ts';

const ROOT = resolve(import.meta.dir, '../..');

export interface Step {
  /** Line of the ```sh fence in the page, for the failure message. */
  line: number;
  commands: string;
  /** What the page says the commands print, or null when it shows nothing. */
  expected: string | null;
}

export interface Section {
  title: string;
  steps: Step[];
}

/** The sections (`## …`) of a page and their runnable steps. */
export function tutorialSections(markdown: string): Section[] {
  const lines = markdown.split('\n');
  const sections: Section[] = [];
  let current: Section = { title: '(top)', steps: [] };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.startsWith('## ')) {
      sections.push(current);
      current = { title: line.slice(3), steps: [] };
      continue;
    }
    const fence = /^```(\w*)$/.exec(line);
    if (fence === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] as string);
    if (fence[1] !== 'sh') continue;
    let expected: string | null = null;
    if (lines[i + 1] === '```') {
      const out: string[] = [];
      for (i += 2; i < lines.length && lines[i] !== '```'; i++) out.push(lines[i] as string);
      expected = out.join('\n');
    }
    current.steps.push({ line: start + 1, commands: body.join('\n'), expected });
  }
  sections.push(current);
  return sections.filter((s) => s.steps.length > 0);
}

/** Lines the page leaves out of its output blocks, as it says at the top. */
const UNSHOWN = [/^creating a new store at /, /^handler \S+ \(from /];

/** `…` on a line of its own stands for any number of lines the page trimmed. */
function matches(expected: string[], actual: string[]): boolean {
  if (expected.length === 0) return actual.length === 0;
  const [head, ...rest] = expected;
  if (head === '…') {
    for (let k = 0; k <= actual.length; k++) if (matches(rest, actual.slice(k))) return true;
    return false;
  }
  return actual.length > 0 && actual[0] === head && matches(rest, actual.slice(1));
}

export interface StepResult {
  step: Step;
  actual: string;
  ok: boolean;
}

/** Runs one section's steps in one bash, in a scratch directory that sees `examples/`. */
export async function runSection(section: Section): Promise<StepResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'onceq-tutorial-'));
  try {
    symlinkSync(join(ROOT, 'examples'), join(dir, 'examples'));
    const scratch = `${dir}/tmp`;
    const script = [
      'exec 2>&1',
      `onceq() { bun ${JSON.stringify(BIN)} "$@"; }`,
      ...section.steps.flatMap((s, i) => [
        `printf '\\n@@step ${i}@@\\n'`,
        s.commands.replaceAll('/tmp/', `${scratch}/`),
      ]),
      `printf '\\n@@step end@@\\n'`,
    ].join('\n');
    const env: Record<string, string | undefined> = { ...process.env, TZ: 'UTC', NO_COLOR: '1' };
    delete env.ONCEQ_DB;
    delete env.CI;
    await runProcess(['mkdir', '-p', scratch]);
    const r = await runProcess(['bash', '-c', script], { cwd: dir, env });
    const parts = r.stdout.replaceAll(`${scratch}/`, '/tmp/').split(/\n@@step [0-9a-z]+@@\n/);
    return section.steps.map((step, i) => {
      const actual = (parts[i + 1] ?? '')
        .split('\n')
        .map((l) => l.trimEnd())
        .filter((l) => !UNSHOWN.some((re) => re.test(l)));
      while (actual.length > 0 && actual.at(-1) === '') actual.pop();
      const text = actual.join('\n');
      const ok =
        step.expected === null ||
        matches(
          step.expected.split('\n').map((l) => l.trimEnd()),
          actual,
        );
      return { step, actual: text, ok };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
