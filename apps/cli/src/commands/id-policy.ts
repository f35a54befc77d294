import type { IdPolicy } from '@onceq/core';
import { getIdPolicy, setIdPolicy } from '@onceq/core';
import { describeIdPolicy, formatIdPolicy, parseIdPolicy } from '@onceq/core/internal';
import { defineCommand } from '../command.ts';
import { UsageError } from '../errors.ts';
import { toJson } from '../output.ts';

type IdPolicyArgs = { action: 'show' } | { action: 'set'; policy: IdPolicy };

export const idPolicyCommand = defineCommand<IdPolicyArgs>({
  name: 'id-policy',
  summary: "show or change the store's event id policy (lesson, general, pattern:<regex>)",
  operands: {
    synopsis: '[show | set <lesson|general|pattern:<regex>>]',
    help: [
      ['show', 'print the policy (the default)'],
      [
        'set <policy>',
        'change it; refused (exit 4, nothing changed) while a stored id would not fit',
      ],
    ],
  },
  flags: {},
  examples: ['id-policy set general', "id-policy set 'pattern:evt_[0-9A-Za-z]{8,32}'"],
  opensStore: true,
  parse({ positionals }) {
    const [action = 'show', policy, extra] = positionals;
    if (action === 'show' && positionals.length <= 1) return { action: 'show' };
    if (action === 'set') {
      if (policy === undefined)
        throw new UsageError('id-policy set needs a policy: lesson, general or pattern:<regex>');
      if (extra !== undefined)
        throw new UsageError(
          `unexpected argument ${JSON.stringify(extra)} for id-policy set (quote a pattern with spaces)`,
        );
      return { action: 'set', policy: parseIdPolicy(policy) };
    }
    throw new UsageError(
      `id-policy takes show or set <policy>, not ${JSON.stringify(positionals.join(' '))}`,
    );
  },
  async run(args, { store, json, ctx }) {
    if (args.action === 'show') {
      const policy = await getIdPolicy(store);
      ctx.out(
        json
          ? toJson({ id_policy: formatIdPolicy(policy), accepts: describeIdPolicy(policy) })
          : `id policy ${formatIdPolicy(policy)}: ${describeIdPolicy(policy)}`,
      );
      return 0;
    }
    const result = await setIdPolicy(store, args.policy);
    const [before, after] = [formatIdPolicy(result.previous), formatIdPolicy(result.policy)];
    ctx.out(
      json
        ? toJson({ id_policy: after, previous: before, checked: result.checked })
        : `id policy ${after} (was ${before}; all ${result.checked} stored ids fit)`,
    );
    return 0;
  },
});
