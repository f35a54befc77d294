// The console for your own application, through the real CLI: `onceq console --handler`
// (or the config's "handler", resolved as `work` and `worker` resolve it) runs your
// module in the redrive preview instead of the lesson's v1 and v2, and the overview
// counts messages whose outcome is a completion as processed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, type CliSandbox, cliSandbox } from '../support/cli.ts';

const PROCESS_MS = 120_000;

/** A payments handler: a completion of its own per payment, no money effect. */
const PAYMENTS_MODULE = `import { PermanentFailure } from '@onceq/core';
export const version = 'payments-1';
export function handle(payload) {
  if (typeof payload.amount_cents !== 'number') {
    throw new PermanentFailure('invalid_payload', 'amount_cents is missing');
  }
  return { async write() {}, summary: 'paid ' + payload.amount_cents };
}
`;

const payment = (id: string, cents: number) =>
  JSON.stringify({ event_id: id, payload: { kind: 'payment', amount_cents: cents } });

/** The environment without ONCEQ_DB: the sandbox's ./onceq.db is the store. */
function withoutStore(env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const { ONCEQ_DB: _, ...rest } = env;
  return rest;
}

/** Starts `onceq console --json --port 0 …` and resolves with its URL once it listens. */
async function startConsole(box: CliSandbox, args: string[]) {
  const proc = Bun.spawn(['bun', BIN, 'console', '--port', '0', '--json', ...args], {
    cwd: box.cwd,
    env: withoutStore(process.env),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const reader = proc.stdout.getReader();
  let text = '';
  while (!text.includes('\n')) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the console ended: ${await new Response(proc.stderr).text()}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const { url } = JSON.parse(text.split('\n')[0] as string) as { url: string };
  return {
    url,
    get: async (path: string) => (await fetch(`${url}${path}`)).text(),
    stop: async () => {
      proc.kill('SIGTERM');
      await proc.exited;
    },
  };
}

describe('the console for your own handler', () => {
  let box: CliSandbox;
  beforeAll(async () => {
    box = cliSandbox();
    writeFileSync(join(box.cwd, 'payments.ts'), PAYMENTS_MODULE);
    // Three payments done with completions of their own, two dead under the lesson's v1.
    writeFileSync(
      join(box.cwd, 'done.jsonl'),
      `${[payment('E0001', 100), payment('E0002', 200), payment('E0003', 300)].join('\n')}\n`,
    );
    writeFileSync(
      join(box.cwd, 'dead.jsonl'),
      `${[payment('E0004', 400), payment('E0005', 500)].join('\n')}\n`,
    );
    for (const args of [
      ['enqueue', 'done.jsonl'],
      ['work', '--handler', './payments.ts'],
      ['enqueue', 'dead.jsonl'],
      ['work', '--handler', 'v1'],
    ]) {
      expect((await box.run(args)).code).toBe(0);
    }
  }, PROCESS_MS);
  afterAll(() => box.cleanup());

  test(
    '--handler: the preview runs the module, and would redrive what it accepts',
    async () => {
      const c = await startConsole(box, ['--handler', './payments.ts']);
      try {
        const preview = await c.get('/dlq/preview?scope=all');
        expect(preview).toContain('Preview: redrive with handler payments-1');
        expect(preview).toContain('<strong>2 of 2</strong> would now be accepted');
        expect(preview).not.toContain('category is missing');
        // Only your handler is offered: the lesson's versions know nothing of payments.
        const unknown = await fetch(`${c.url}/dlq/preview?scope=all&handler=v2`);
        expect(unknown.status).toBe(400);
        expect(await unknown.text()).toContain('(known: payments-1)');
      } finally {
        await c.stop();
      }
    },
    PROCESS_MS,
  );

  test(
    'the config\'s "handler" is the default, as for work and worker',
    async () => {
      writeFileSync(join(box.cwd, 'onceq.config.json'), '{"handler":"./payments.ts"}\n');
      const c = await startConsole(box, []);
      try {
        expect(await c.get('/dlq/preview?scope=all')).toContain(
          'Preview: redrive with handler payments-1',
        );
      } finally {
        await c.stop();
        writeFileSync(join(box.cwd, 'onceq.config.json'), '{}\n');
      }
    },
    PROCESS_MS,
  );

  test(
    "without one, the preview offers the lesson's v1 and v2, which refuse a payment",
    async () => {
      const c = await startConsole(box, []);
      try {
        const preview = await c.get('/dlq/preview?scope=all');
        expect(preview).toContain('Preview: redrive with handler v2');
        expect(preview).toContain('<strong>0 of 2</strong> would now be accepted');
      } finally {
        await c.stop();
      }
    },
    PROCESS_MS,
  );

  test(
    'the overview counts messages done with a completion as processed',
    async () => {
      const c = await startConsole(box, []);
      try {
        const overview = await c.get('/');
        expect(overview).not.toContain('nothing has been processed');
        expect(overview).toContain('3 processed: 0 money effects, 3 completions');
      } finally {
        await c.stop();
      }
    },
    PROCESS_MS,
  );
});
