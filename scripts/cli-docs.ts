/**
 * `bun scripts/cli-docs.ts`: writes docs/cli.md from the command specs. The docs test
 * fails when the page is not what this prints, so a changed flag changes its docs.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCommands } from '@onceq/cli/commands/index.ts';
import { cliReference } from '@onceq/cli/reference.ts';

const path = join(import.meta.dir, '..', 'docs', 'cli.md');
writeFileSync(path, cliReference(await loadCommands()));
console.log(`wrote ${path}`);
