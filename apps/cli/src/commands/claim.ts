import { claim, type Lease } from '@onceq/core';
import { holdClaim, printable } from '@onceq/core/internal';
import { boolFlag, expectPositionals, intFlag } from '../args.ts';
import { defineCommand } from '../command.ts';
import type { Context } from '../context.ts';
import { humanTime, RawJson, toJson } from '../output.ts';

interface ClaimArgs {
  leaseSeconds: number | undefined;
  hold: boolean;
}

export const claimCommand = defineCommand<ClaimArgs>({
  name: 'claim',
  summary: 'claim one message and print its lease',
  flags: {
    lease: { type: 'string', value: 'S', help: 'lease length in seconds (default 30)' },
    hold: {
      type: 'boolean',
      help: 'keep the claim transaction open until Enter (to watch a competing claimer)',
    },
  },
  opensStore: true,
  examples: ['claim --lease 60', 'claim --hold   # in two terminals, to watch the write lock'],
  parse({ values, positionals }) {
    expectPositionals(positionals, [], 'claim');
    return {
      leaseSeconds: intFlag(values, 'lease', { min: 1 }),
      hold: boolFlag(values, 'hold') ?? false,
    };
  },
  async run(args, { store, json, ctx }) {
    const options = args.leaseSeconds === undefined ? {} : { leaseSeconds: args.leaseSeconds };
    if (!args.hold) {
      printLease(await claim(store, options), json, ctx, store.clock());
      return 0;
    }
    await holdClaim(store, options, async (lease) => {
      printLease(lease, json, ctx, store.clock());
      if (lease === null) return;
      // Listening before saying so: a Ctrl-C right after the sentence is answered.
      const stopListening = ctx.onInterrupt?.(() =>
        ctx.err(
          `onceq: interrupted: the claim of ${lease.eventId} was rolled back, nothing was committed (its attempt is not spent)`,
        ),
      );
      ctx.err(
        'holding the claim transaction open, not committed yet: press Enter to commit (Ctrl-C rolls it back)',
      );
      try {
        await ctx.waitForLine();
      } finally {
        stopListening?.();
      }
    });
    if (!json) ctx.out('claim committed');
    return 0;
  },
});

/** The lease as JSON (`null` when nothing was claimable), or two lines for people. */
export function leaseJson(lease: Lease | null): string {
  if (lease === null) return 'null';
  return toJson({
    event_id: lease.eventId,
    generation: lease.generation,
    attempt: lease.attempt,
    lease_until: lease.leaseUntil,
    payload: new RawJson(lease.payload),
  });
}

function printLease(lease: Lease | null, json: boolean, ctx: Context, now: number): void {
  if (json) ctx.out(leaseJson(lease));
  else if (lease === null) ctx.out(`nothing to claim at ${humanTime(now, now)}`);
  else {
    ctx.out(
      `claimed ${lease.eventId} generation ${lease.generation} (attempt ${lease.attempt}), lease until ${humanTime(lease.leaseUntil, now)}`,
    );
    ctx.out(`payload ${printable(lease.payload)}`);
  }
}
