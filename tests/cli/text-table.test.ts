/** The one text table of the CLI, the demo and the bench (core's `textTable`). */
import { expect, test } from 'bun:test';
import { table as benchTable } from '@onceq/bench/report.ts';
import { table as cliTable } from '@onceq/cli/output.ts';
import { textTable } from '@onceq/core/internal';

test('columns padded to their widest cell, two spaces apart, no trailing spaces', () => {
  expect(
    textTable(
      [
        ['state', 'messages'],
        ['done', 12],
        ['dead', '3'],
      ],
      ['left', 'right'],
    ),
  ).toEqual(['state  messages', 'done         12', 'dead          3']);
  expect(
    textTable([
      ['a', 'b'],
      ['long cell', ''],
    ]),
  ).toEqual(['a          b', 'long cell']);
});

test('alignment per cell, and a rule of dashes under the header', () => {
  const right = (cell: string) => (/^\d+$/.test(cell) ? 'right' : 'left');
  expect(
    textTable(
      [
        ['name', 'rate'],
        ['x', '5'],
        ['y', '–'],
      ],
      right,
      { rule: true },
    ),
  ).toEqual(['name  rate', '----  ----', 'x        5', 'y     –']);
});

test('a newline or a bidi override in a cell is escaped, so it cannot start a line or reorder the row', () => {
  expect(
    textTable([
      ['E1', 'line\nbreak'],
      ['E2', '\u202e001'],
    ]),
  ).toEqual(['E1  line\\nbreak', 'E2  \\u202e001']);
});

test('the CLI and the bench draw with it', () => {
  expect(cliTable).toBe(textTable);
  expect(
    benchTable(
      ['section', 'msg/s'],
      [
        ['sqlite', '1,234'],
        ['pg', '–'],
      ],
    ),
  ).toBe(['section  msg/s', '-------  -----', 'sqlite   1,234', 'pg       –'].join('\n'));
});
