/**
 * The inspector page. Live client list from the server's event stream (`/mdp/inspector/events`,
 * read with fetch so the token header can be sent); a path picked from it fills the call form;
 * `POST /mdp/call` runs it; `/mdp/meta` gives the cluster view.
 *
 *   events ──clients──▶ render list ──click a path──▶ form ──submit──▶ /mdp/call ──▶ status, time, result
 *     └─ 401 ──▶ token form ──▶ sessionStorage ──▶ reconnect
 *
 * Each event is the first page of the clients (SPEC §12.6). "Show more clients" reads the next page
 * from `GET /mdp/clients?cursor=`; after each event the pages shown beyond the first are read again
 * from its cursor, so a huge catalog is read only as far as someone looks.
 */
import type { EndpointMethod, ListClientsResult, ListedClient, MetaDocument, PathDescriptor } from '@mdp/protocol';
import { Unauthorized, authHeaders, callPath, listClientsPage, readMeta, setToken, token } from './api.js';
import { byId, el } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { SseParser } from './sse.js';

/** Wait before reconnecting a dropped event stream, ms: doubles up to the maximum. */
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 8000;
/** How often the cluster view refreshes on its own, ms. */
const CLUSTER_REFRESH_MS = 10_000;

interface Selected {
  readonly clientId: string;
  readonly path: PathDescriptor;
}

const state: {
  /** The clients shown: the event's first page, then the pages read after it, in listing order. */
  clients: ListedClient[];
  /** Where the listing goes on after `clients`; undefined when they are all of it. */
  nextCursor: string | undefined;
  /** Pages the user asked for beyond the first (read again after each event). */
  morePages: number;
  /** The reading of those pages now, if any. */
  reading: AbortController | undefined;
  selected: Selected | undefined;
  stream: AbortController | undefined;
} = {
  clients: [],
  nextCursor: undefined,
  morePages: 0,
  reading: undefined,
  selected: undefined,
  stream: undefined,
};

const methodOf = (path: PathDescriptor): EndpointMethod => (path.type === 'endpoint' ? path.method : 'GET');

function setLive(text: string, kind: 'live' | 'down' | 'auth'): void {
  const live = byId('live');
  live.textContent = text;
  live.dataset.state = kind;
}

// ----------------------------------------------------------------------------------------------
// Token

function askForToken(message: string): void {
  setLive('needs a token', 'auth');
  const form = byId<HTMLFormElement>('token-form');
  form.hidden = false;
  byId('token-error').textContent = message;
  byId<HTMLInputElement>('token').focus();
}

function wireTokenForm(): void {
  const form = byId<HTMLFormElement>('token-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const input = byId<HTMLInputElement>('token');
    setToken(input.value.trim() || undefined);
    input.value = '';
    form.hidden = true;
    connectEvents();
    void refreshCluster();
  });
  byId('token-button').addEventListener('click', () => askForToken(token() ? 'Replace the token kept for this tab.' : ''));
}

// ----------------------------------------------------------------------------------------------
// Clients, live

function renderClients(): void {
  const list = byId<HTMLUListElement>('clients');
  // In listing order (by id), page after page.
  const clients = state.clients;
  byId('client-count').textContent = `(${clients.length}${state.nextCursor === undefined ? '' : '+'})`;
  byId('no-clients').hidden = clients.length > 0 || state.nextCursor !== undefined;
  byId('more-clients').hidden = state.nextCursor === undefined;
  list.replaceChildren(
    ...clients.map((client) =>
      el(
        'li',
        { class: 'client', 'data-client-id': client.id },
        el('div', { class: 'client-head' }, el('strong', {}, client.name), ' ', el('code', {}, client.id)),
        el(
          'div',
          { class: 'client-meta' },
          `${client.connection.mode}${client.connection.secure ? ' (TLS)' : ''} · auth ${client.connection.authSource} · ${client.paths.length} path${client.paths.length === 1 ? '' : 's'}`,
          client.aliases.length > 0 && ` · also ${client.aliases.join(', ')}`,
        ),
        el('ul', { class: 'paths' }, ...client.paths.map((path) => pathItem(client, path))),
      ),
    ),
  );
}

function pathItem(client: ListedClient, path: PathDescriptor): HTMLLIElement {
  const selected = state.selected?.clientId === client.id && state.selected.path.path === path.path && methodOf(state.selected.path) === methodOf(path);
  const button = el(
    'button',
    { type: 'button', class: `path${selected ? ' selected' : ''}`, 'data-path': path.path, 'data-method': methodOf(path), 'data-type': path.type },
    el('span', { class: `method ${path.type}` }, path.type === 'endpoint' ? methodOf(path) : path.type),
    ' ',
    el('code', {}, path.path),
  );
  button.addEventListener('click', () => select(client.id, path));
  return el('li', {}, button, path.description !== undefined && el('div', { class: 'description' }, path.description));
}

function select(clientId: string, path: PathDescriptor): void {
  state.selected = { clientId, path };
  byId<HTMLInputElement>('call-client').value = clientId;
  byId<HTMLSelectElement>('call-method').value = methodOf(path);
  byId<HTMLInputElement>('call-path').value = path.path;
  byId<HTMLTextAreaElement>('call-body').value = path.type === 'endpoint' && path.method !== 'GET' ? '{}' : '';
  byId('call-hint').textContent = path.path.includes('/:')
    ? 'Replace each :name segment with a value.'
    : path.type === 'endpoint'
      ? (path.description ?? '')
      : `A ${path.type}: its text is rendered as Markdown.`;
  renderClients();
}

/** A new first page: shown at once, then the pages the user had asked for beyond it are read again. */
function firstPage(page: ListClientsResult): void {
  state.reading?.abort();
  state.reading = undefined;
  state.clients = page.clients;
  state.nextCursor = page.nextCursor;
  renderClients();
  if (state.morePages > 0) void readMore(state.morePages);
}

/** Read `pages` more pages after what is shown, one after the other; a newer event stops it. */
async function readMore(pages: number): Promise<void> {
  state.reading?.abort();
  const controller = new AbortController();
  state.reading = controller;
  const button = byId<HTMLButtonElement>('more-clients');
  button.disabled = true;
  try {
    for (let read = 0; read < pages && state.nextCursor !== undefined; read++) {
      const page = await listClientsPage(state.nextCursor, controller.signal);
      if (controller.signal.aborted) return;
      state.clients = [...state.clients, ...page.clients];
      state.nextCursor = page.nextCursor;
      renderClients();
    }
  } catch (error) {
    if (error instanceof Unauthorized) askForToken('The server asks for a token.');
  } finally {
    if (state.reading === controller) {
      state.reading = undefined;
      button.disabled = false;
    }
  }
}

function wireMoreButton(): void {
  byId('more-clients').addEventListener('click', () => {
    state.morePages += 1;
    void readMore(1);
  });
}

/** Read the event stream until it ends; reconnect with back-off unless it was refused. */
function connectEvents(): void {
  state.stream?.abort();
  const controller = new AbortController();
  state.stream = controller;
  let delay = RECONNECT_MIN_MS;
  const run = async (): Promise<void> => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch('/mdp/inspector/events', { headers: authHeaders(), signal: controller.signal, cache: 'no-store' });
        if (response.status === 401) {
          askForToken(token() ? 'The server refused this token.' : 'The server asks for a token.');
          return;
        }
        if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
        setLive('live', 'live');
        delay = RECONNECT_MIN_MS;
        const parser = new SseParser();
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const event of parser.push(value)) {
            if (event.event !== 'clients') continue;
            firstPage(JSON.parse(event.data) as ListClientsResult);
          }
        }
      } catch {
        if (controller.signal.aborted) return;
      }
      setLive('reconnecting…', 'down');
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    }
  };
  void run();
}

// ----------------------------------------------------------------------------------------------
// Calls

function parseQuery(text: string): Record<string, string> | undefined {
  const trimmed = text.trim().replace(/^\?/, '');
  if (trimmed === '') return undefined;
  const query: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(trimmed)) query[key] = value;
  return query;
}

function showResult(status: string, ms: number | undefined, body: unknown, markdown: string | undefined): void {
  byId('result').hidden = false;
  byId('result-status').textContent = status;
  byId('result-time').textContent = ms === undefined ? '' : `${ms.toFixed(1)} ms`;
  const json = byId('result-json');
  const frame = byId<HTMLIFrameElement>('result-markdown');
  if (markdown !== undefined) {
    json.hidden = true;
    frame.hidden = false;
    renderMarkdown(frame, markdown);
  } else {
    frame.hidden = true;
    frame.removeAttribute('srcdoc');
    json.hidden = false;
    json.textContent = typeof body === 'string' ? body : JSON.stringify(body, null, 2);
  }
}

function wireCallForm(): void {
  const form = byId<HTMLFormElement>('call-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const bodyText = byId<HTMLTextAreaElement>('call-body').value.trim();
    let body: unknown;
    if (bodyText !== '') {
      try {
        body = JSON.parse(bodyText);
      } catch (error) {
        showResult('Body is not valid JSON', undefined, (error as Error).message, undefined);
        return;
      }
    }
    const request = {
      clientId: byId<HTMLInputElement>('call-client').value.trim(),
      method: byId<HTMLSelectElement>('call-method').value,
      path: byId<HTMLInputElement>('call-path').value.trim(),
      query: parseQuery(byId<HTMLInputElement>('call-query').value),
      ...(body === undefined ? {} : { body }),
    };
    const button = byId<HTMLButtonElement>('call-button');
    button.disabled = true;
    callPath(request)
      .then(({ status, ms, body: answer }) => {
        const data = (answer as { ok?: boolean; data?: unknown }).data;
        const isDocument = state.selected?.path.path === request.path && state.selected.path.type !== 'endpoint';
        showResult(`${status}`, ms, answer, isDocument && status === 200 && typeof data === 'string' ? data : undefined);
      })
      .catch((error: unknown) => {
        if (error instanceof Unauthorized) askForToken('The server asks for a token.');
        else showResult('Request failed', undefined, (error as Error).message, undefined);
      })
      .finally(() => {
        button.disabled = false;
      });
  });
}

// ----------------------------------------------------------------------------------------------
// Cluster view

async function refreshCluster(): Promise<void> {
  const list = byId('cluster');
  try {
    const meta = (await readMeta()) as MetaDocument;
    const { cluster } = meta;
    byId('server').textContent = meta.serverId;
    const row = (term: string, value: string): Node[] => [el('dt', {}, term), el('dd', {}, value)];
    list.replaceChildren(
      ...row('Server', meta.serverId),
      ...row('Role', cluster.role),
      ...row('Term', String(cluster.term)),
      ...row('Leader', cluster.leaderId === '' ? '(none known)' : `${cluster.leaderId} ${cluster.leaderUrl}`),
      ...row(
        'Members',
        `${cluster.reachableMemberCount} reachable of ${cluster.knownMemberCount} known, quorum ${cluster.quorumSize}${cluster.hasQuorum ? '' : ' (not reached)'}`,
      ),
      ...row('Membership', cluster.membershipMode),
    );
  } catch (error) {
    list.replaceChildren(el('dd', {}, `Cannot read /mdp/meta: ${(error as Error).message}`));
  }
}

function start(): void {
  wireTokenForm();
  wireCallForm();
  wireMoreButton();
  byId('cluster-refresh').addEventListener('click', () => void refreshCluster());
  connectEvents();
  void refreshCluster();
  setInterval(() => void refreshCluster(), CLUSTER_REFRESH_MS);
}

start();
