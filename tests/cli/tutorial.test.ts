/**
 * docs/tutorial.md is true: every ```sh block runs against the real CLI and prints the
 * output block the page shows after it (tests/support/tutorial.ts says how).
 */
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { runSection, tutorialSections } from '../support/tutorial.ts';

const PAGE = resolve(import.meta.dir, '../../docs/tutorial.md');
const sections = tutorialSections(readFileSync(PAGE, 'utf8'));

describe('docs/tutorial.md', () => {
  test('has runnable steps, most of them with the output they print', () => {
    const steps = sections.flatMap((s) => s.steps);
    expect(steps.length).toBeGreaterThan(25);
    expect(steps.filter((s) => s.expected !== null).length).toBeGreaterThan(20);
  });

  for (const section of sections) {
    test(`${section.title}: every block prints what the page shows`, async () => {
      for (const r of await runSection(section)) {
        const where = `docs/tutorial.md:${r.step.line}\n${r.step.commands}`;
        expect({ where, output: r.ok ? r.step.expected : r.actual }).toEqual({
          where,
          output: r.step.expected,
        });
      }
    }, 120_000);
  }

  test('a block whose output differs from the page fails', async () => {
    const [wrong] = tutorialSections(
      ['## planted', '```sh', 'echo 17000', '```', '```', '19000', '```'].join('\n'),
    );
    const [result] = await runSection(wrong as NonNullable<typeof wrong>);
    expect(result?.ok).toBe(false);
    expect(result?.actual).toBe('17000');
  });

  test('… stands for trimmed lines, and nothing else is skipped', async () => {
    const page = ['## trims', '```sh', 'printf "a\\nb\\nc\\n"', '```', '```', 'a', '…', 'c', '```'];
    const [ok] = await runSection(tutorialSections(page.join('\n'))[0] as never);
    expect(ok?.ok).toBe(true);
    page[6] = 'x';
    const [bad] = await runSection(tutorialSections(page.join('\n'))[0] as never);
    expect(bad?.ok).toBe(false);
  });
});
