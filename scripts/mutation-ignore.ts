/**
 * A StrykerJS ignore plugin for `bun run mutation` (stryker.config.json names it in
 * `plugins` and `ignorers`): string and template literals inside a `throw` are left
 * unmutated. They are the sentences of the errors (`JsonParseError`'s reason, a
 * `TypeError` of canonicalize, a `BatchRejectedError`'s issue, a `LeaseLostError`):
 * rewording one changes no state and no accept/reject decision, only what a person
 * reads; the tests check the error's class, code, line and position instead. Everything
 * else in a `throw` (the condition before it, the position, the line number,
 * the error class) is still mutated. Returned strings outside a `throw` (a batch
 * issue's reason built by a helper) are mutated too. CONTRIBUTING.md, "Mutation testing".
 *
 * No import of `@stryker-mutator/api`: a plugin is a plain `{ kind, name, value }`, and
 * the API package is not a direct dependency.
 */

/** The part of Babel's `NodePath` this plugin uses. */
interface NodePathLike {
  isStringLiteral(): boolean;
  isTemplateLiteral(): boolean;
  isThrowStatement(): boolean;
  findParent(test: (parent: NodePathLike) => boolean): NodePathLike | null;
}

export const ERROR_SENTENCES_REASON =
  'error sentence: wording inside a throw changes no state (scripts/mutation-ignore.ts)';

/** Ignore a string or template literal that sits anywhere inside a `throw` statement. */
export function shouldIgnore(path: NodePathLike): string | undefined {
  if (!path.isStringLiteral() && !path.isTemplateLiteral()) return undefined;
  return path.findParent((parent) => parent.isThrowStatement()) === null
    ? undefined
    : ERROR_SENTENCES_REASON;
}

export const strykerPlugins = [
  { kind: 'Ignore', name: 'error-sentences', value: { shouldIgnore } },
];
