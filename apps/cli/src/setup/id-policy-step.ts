/**
 * The setup question "which event ids will this store receive?" (the store's id policy,
 * recorded when the store is created). No @clack/prompts import: the prompter is injected.
 */
import {
  describeIdPolicy,
  GENERAL_POLICY,
  LESSON_POLICY,
  parseIdPolicy,
} from '@onceq/core/internal';
import type { Prompter } from './prompter.ts';

type Choice = 'lesson' | 'general' | 'pattern';

/** Asks for the policy; resolves to its text (`lesson`, `general`, `pattern:<regex>`). */
export async function askIdPolicy(prompter: Prompter): Promise<string> {
  const choice = await prompter.select<Choice>({
    message: 'Which event ids will this store receive? (its id policy)',
    options: [
      { value: 'lesson', label: 'lesson', hint: describeIdPolicy(LESSON_POLICY) },
      { value: 'general', label: 'general', hint: describeIdPolicy(GENERAL_POLICY) },
      { value: 'pattern', label: 'pattern', hint: 'a regular expression of your own' },
    ],
    initialValue: 'lesson',
  });
  if (choice !== 'pattern') return choice;
  const source = await prompter.text({
    message: 'The pattern every event id must match as a whole (e.g. evt_[0-9A-Za-z]{8,32})',
    validate: (value) => {
      try {
        parseIdPolicy(`pattern:${value}`);
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    },
  });
  return `pattern:${source}`;
}
