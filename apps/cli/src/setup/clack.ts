import * as p from '@clack/prompts';
import { CancelledError } from '../errors.ts';
import type { Prompter } from './prompter.ts';

/** The real prompter: @clack/prompts on the terminal. A cancelled prompt rejects with {@link CancelledError}. */
export function clackPrompter(): Prompter {
  const answer = <T>(value: T | symbol): T => {
    if (p.isCancel(value)) throw new CancelledError();
    return value as T;
  };
  return {
    intro: (title) => p.intro(title),
    text: async (options) =>
      answer<string>(
        await p.text({
          message: options.message,
          ...(options.placeholder === undefined ? {} : { placeholder: options.placeholder }),
          ...(options.defaultValue === undefined ? {} : { defaultValue: options.defaultValue }),
          ...(options.validate === undefined
            ? {}
            : { validate: (value: string | undefined) => options.validate?.(value ?? '') }),
        }),
      ),
    select: async <T extends string>(options: {
      message: string;
      options: { value: T; label: string; hint?: string }[];
      initialValue?: T;
    }) =>
      answer<T>(
        await p.select<T>({
          message: options.message,
          // clack's Option type is conditional on the value type; the shapes match.
          options: options.options as never,
          ...(options.initialValue === undefined ? {} : { initialValue: options.initialValue }),
        }),
      ),
    confirm: async (options) =>
      answer<boolean>(
        await p.confirm({
          message: options.message,
          ...(options.initialValue === undefined ? {} : { initialValue: options.initialValue }),
        }),
      ),
    spinner: () => {
      const s = p.spinner();
      return { start: (m) => s.start(m), stop: (m) => s.stop(m), error: (m) => s.error(m) };
    },
    note: (message, title) => p.note(message, title),
    info: (message) => p.log.info(message),
    warn: (message) => p.log.warn(message),
    outro: (message) => p.outro(message),
    cancel: (message) => p.cancel(message),
  };
}
