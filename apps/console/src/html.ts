import { printable } from '@onceq/core';

/**
 * HTML built from template literals: every interpolated value is escaped unless it is
 * already {@link Html} (made by {@link html} or {@link raw}). Escaping is the default so
 * a payload, an error detail or an event id can never inject markup.
 */
export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

/** Anything a template may interpolate; arrays are joined, null/undefined/false print nothing. */
export type HtmlValue = Html | string | number | bigint | boolean | null | undefined | HtmlValue[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Escapes text for an element body or a quoted attribute value. Control and bidi
 * characters are shown as `\uXXXX` (core's `printable`): a payload cannot reorder the
 * row it sits in.
 */
export function escapeHtml(text: string): string {
  return printable(text, true).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** The tagged template: `html\`<p>${untrusted}</p>\``. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** Trusted markup (our own CSS, script, SVG built from numbers): no escaping. */
export function raw(text: string): Html {
  return new Html(text);
}
