/**
 * DLQ → preview → redrive. The preview (changes nothing, allowed read-only) runs a
 * handler over the selected dead messages with core's `previewRedrive`; it reads its
 * parameters from the query of a link (GET) or from the DLQ page's form (POST, since a
 * page of selected ids does not fit in a URL). The confirm
 * form names exactly the ids the preview showed, so the count confirmed is the count
 * redriven; core's `redrive` is all-or-nothing (one message no longer dead refuses the
 * whole call). The redrive itself runs no handler: the worker that claims the messages
 * decides, exactly as `onceq redrive` does.
 */

import type { RedrivePreview } from '@onceq/core';
import { type Handler, NotDeadError, NotFoundError, previewRedrive, redrive } from '@onceq/core';
import { listMessages } from '@onceq/core/admin';
import { MAX_EVENT_ID_BYTES } from '@onceq/core/internal';
import type { ConsoleState, Request0 } from '../context.ts';
import { badParam, ConsoleRequestError, forbidden } from '../errors.ts';
import { type Html, html } from '../html.ts';
import { page } from '../layout.ts';
import { expectParams, parseListQuery, readForm, toFilter } from '../params.ts';
import { checkOrigin, sameSecret } from '../security.ts';
import { invalidateOverview } from './overview.ts';

/** The most messages one preview or redrive takes: one page of ids in one statement. */
export const MAX_SELECTION = 1000;

/** Any id a store can hold: printable ASCII without spaces, up to the general policy's length. */
const ID_TEXT = new RegExp(`^[\\x21-\\x7e]{1,${MAX_EVENT_ID_BYTES}}$`);
/** The longest sign-in return address that still holds a preview's selection. */
const MAX_NEXT = 2000;

function checkIds(ids: readonly string[]): string[] {
  for (const id of ids) {
    if (!ID_TEXT.test(id))
      throw badParam('ids', `${JSON.stringify(id.slice(0, 40))} is not an event id`);
  }
  const unique = [...new Set(ids)];
  if (unique.length > MAX_SELECTION) {
    throw badParam('ids', `at most ${MAX_SELECTION} messages at a time, not ${unique.length}`);
  }
  return unique;
}

function checkHandler(state: ConsoleState, name: string | null): string {
  const handler = name ?? state.defaultHandler;
  if (!Object.hasOwn(state.handlers, handler)) {
    throw badParam(
      'handler',
      `unknown handler ${JSON.stringify(handler)} (known: ${Object.keys(state.handlers).join(', ')})`,
    );
  }
  return handler;
}

/** The dead ids matching the DLQ filter of `params`, refusing more than {@link MAX_SELECTION}. */
async function matchingIds(state: ConsoleState, params: URLSearchParams): Promise<string[]> {
  const query = parseListQuery(params, 'dead');
  const filter = toFilter(query, state.store.clock());
  const ids: string[] = [];
  let after: string | undefined;
  while (ids.length <= MAX_SELECTION) {
    const page = await listMessages(state.store, {
      ...filter,
      limit: 500,
      ...(after === undefined ? {} : { after }),
    });
    ids.push(...page.messages.map((m) => m.eventId));
    if (page.next === null) break;
    after = page.next;
  }
  if (ids.length > MAX_SELECTION) {
    throw badParam(
      'scope',
      `more than ${MAX_SELECTION} dead messages match this filter: narrow it (or use onceq redrive --all)`,
    );
  }
  return ids;
}

/** NotFound / NotDead in plain words: a 409, nothing changed. */
function refusal(error: unknown): ConsoleRequestError | null {
  if (error instanceof NotDeadError || error instanceof NotFoundError) {
    return new ConsoleRequestError(
      409,
      error.code,
      `${error.message}: reload the dead letters and select again.`,
    );
  }
  return null;
}

/** The parameters of a preview: the form of a POST, the query of a GET. */
async function previewParams(r: Request0): Promise<URLSearchParams> {
  return r.req.method === 'POST' ? await readForm(r.req) : r.url.searchParams;
}

export async function previewPage(state: ConsoleState, r: Request0): Promise<Response> {
  const params = await previewParams(r);
  expectParams(
    params,
    ['scope', 'ids', 'handler', 'queue', 'code', 'prefix', 'older', 'newer'],
    ['ids'],
  );
  const scope = params.get('scope') ?? 'selected';
  if (scope !== 'selected' && scope !== 'all') {
    throw badParam('scope', `scope must be selected or all, not ${JSON.stringify(scope)}`);
  }
  const handler = checkHandler(state, params.get('handler'));
  const ids = scope === 'all' ? await matchingIds(state, params) : checkIds(params.getAll('ids'));
  if (ids.length === 0) {
    throw badParam(
      'ids',
      scope === 'all'
        ? 'no dead message matches this filter: nothing to redrive'
        : 'select at least one message, or choose "all matching this filter"',
    );
  }
  let preview: RedrivePreview[];
  try {
    preview = await previewRedrive(state.store, ids, state.handlers[handler] as Handler);
  } catch (error) {
    throw refusal(error) ?? error;
  }
  const accepted = preview.filter((p) => p.accepted);
  const rejected = preview.filter((p) => !p.accepted);
  return page(
    state,
    r,
    'dlq',
    'Preview redrive',
    html`<p><a href="/dlq">← Dead letters</a></p>
<h1>Preview: redrive with handler ${handler}</h1>
<p class="notice" role="status" data-testid="preview-summary">Dry run, nothing changed: with ${handler}, <strong>${accepted.length} of ${preview.length}</strong> would now be accepted${rejected.length > 0 ? html`, ${rejected.length} would still be rejected` : ''}.</p>
${confirmForms(state, r, handler, accepted, preview, params)}
<div class="scroll"><table><thead><tr><th scope="col">Event id</th><th scope="col">With ${handler}</th><th scope="col">Why</th></tr></thead><tbody>
${[...rejected, ...accepted].map(
  (
    p,
  ) => html`<tr data-testid="preview-${p.eventId}"><td class="mono"><a href="/messages/${encodeURIComponent(p.eventId)}">${p.eventId}</a></td>
<td class="${p.accepted ? 'accepted' : 'rejected'}">${p.accepted ? 'would be accepted' : 'still rejected'}</td>
<td>${p.accepted ? '' : html`<span class="mono">${p.code}</span>: ${p.detail}`}</td></tr>`,
)}
</tbody></table></div>
`,
  );
}

function confirmForm(
  r: Request0,
  handler: string,
  ids: readonly string[],
  label: string,
  cls: string,
): Html {
  return html`<form method="post" action="/dlq/redrive">
<input type="hidden" name="csrf" value="${r.session?.csrf ?? ''}"><input type="hidden" name="handler" value="${handler}">
${ids.map((id) => html`<input type="hidden" name="ids" value="${id}">`)}
<button type="submit" class="${cls}">${label}</button></form>`;
}

function confirmForms(
  state: ConsoleState,
  r: Request0,
  handler: string,
  accepted: readonly RedrivePreview[],
  all: readonly RedrivePreview[],
  params: URLSearchParams,
): Html {
  if (!state.allowWrites) {
    return html`<p class="notice">This console is read-only: start it with <code>onceq console --allow-writes</code> to redrive.</p>`;
  }
  if (r.session === null) {
    // Back to this same preview after sign-in, unless its selection is too long for a URL.
    const here = `/dlq/preview?${params}`;
    const next = here.length <= MAX_NEXT ? here : '/dlq';
    return html`<p class="notice"><a href="/login?next=${encodeURIComponent(next)}">Sign in with the console's token</a> to redrive.</p>`;
  }
  const plural = (n: number) => (n === 1 ? '1 message' : `${n} messages`);
  const forms: Html[] = [];
  if (accepted.length > 0) {
    forms.push(
      confirmForm(
        r,
        handler,
        accepted.map((p) => p.eventId),
        `Redrive the ${plural(accepted.length)} ${handler} would accept`,
        '',
      ),
    );
  }
  if (accepted.length < all.length) {
    forms.push(
      confirmForm(
        r,
        handler,
        all.map((p) => p.eventId),
        `Redrive all ${plural(all.length)} (the rejected ones will die again)`,
        'secondary',
      ),
    );
  }
  return html`<div class="actions">${forms}</div>
<p class="muted">A redrive puts the messages back to ready with their attempts reset; the worker that claims them runs its own handler, so run the worker with ${handler}.</p>`;
}

/** POST /dlq/redrive: every check of a write, then core's all-or-nothing redrive. */
/**
 * The checks in front of every write: writes allowed, signed in, same origin, the
 * session's CSRF token in the form. Returns the form and who writes, for the write log.
 */
export async function writeForm(
  state: ConsoleState,
  r: Request0,
  verb: { to: string; ing: string },
): Promise<{ form: URLSearchParams; who: string }> {
  if (!state.allowWrites) {
    throw forbidden(
      'read_only',
      `this console is read-only: start it with onceq console --allow-writes to ${verb.to}`,
    );
  }
  const session = r.session;
  if (session === null)
    throw forbidden('not_signed_in', `sign in with the console token before ${verb.ing}`);
  checkOrigin(r.req);
  const form = await readForm(r.req);
  const csrf = form.get('csrf');
  if (typeof csrf !== 'string' || !sameSecret(csrf, session.csrf)) {
    throw forbidden(
      'bad_csrf',
      'the form is stale or did not come from this console (CSRF check failed): reload the page and try again',
    );
  }
  return { form, who: `session ${session.id.slice(0, 6)} from ${session.client}` };
}

export async function redriveAction(state: ConsoleState, r: Request0): Promise<Response> {
  const { form, who } = await writeForm(state, r, { to: 'redrive', ing: 'redriving' });
  const ids = checkIds(form.getAll('ids'));
  if (ids.length === 0) throw badParam('ids', 'no message to redrive was named');
  // Checked against the known handlers: the name goes into the write log.
  const handlerField = form.get('handler');
  const handler = checkHandler(state, handlerField);
  let redriven: string[];
  try {
    redriven = await redrive(state.store, ids);
  } catch (error) {
    const plain = refusal(error);
    state.log(
      `onceq console: redrive of ${ids.length} by ${who} refused: ${plain?.message ?? (error as Error).message}`,
    );
    throw plain ?? error;
  }
  invalidateOverview(state);
  state.log(
    `onceq console: redrive by ${who}: ${redriven.length} messages (previewed with ${handler}): ${redriven.join(', ')}`,
  );
  return page(
    state,
    r,
    'dlq',
    'Redriven',
    html`<h1>Redriven</h1>
<p class="notice ok" role="status" data-testid="redrive-result">Redriven <strong>${redriven.length}</strong> ${redriven.length === 1 ? 'message' : 'messages'}: ${redriven.join(', ')}. ${redriven.length === 1 ? 'It is' : 'They are'} ready now with attempts reset; a worker running ${handler} will pick ${redriven.length === 1 ? 'it' : 'them'} up.</p>
<p><a href="/dlq">Back to the dead letters</a> · <a href="/">Overview</a></p>`,
  );
}
