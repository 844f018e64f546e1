/**
 * The server's API as the page uses it: every request carries the token kept for this tab (the
 * page asks for it once, on the first 401), and the token never leaves this origin.
 */

import type { ListClientsResult } from '@mdp/protocol';

const TOKEN_KEY = 'mdp-inspector-token';

/** The answer to a request the server refused for want of a credential. */
export class Unauthorized extends Error {
  constructor() {
    super('The server asks for a token');
  }
}

export function token(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function setToken(value: string | undefined): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(): Record<string, string> {
  const value = token();
  return value ? { authorization: `Bearer ${value}` } : {};
}

export interface CallAnswer {
  readonly status: number;
  readonly ms: number;
  readonly body: unknown;
}

/** `POST /mdp/call`; resolves with the status, the time it took and the JSON answer. */
export async function callPath(request: Record<string, unknown>, signal?: AbortSignal): Promise<CallAnswer> {
  const started = performance.now();
  const response = await fetch('/mdp/call', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authHeaders() },
    body: JSON.stringify(request),
    signal,
  });
  const text = await response.text();
  const ms = performance.now() - started;
  if (response.status === 401) throw new Unauthorized();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's error page): shown as text.
  }
  return { status: response.status, ms, body };
}

/** Clients in one page the page asks for (the host API's default). */
export const CLIENTS_PAGE = 100;

/** `GET /mdp/clients` from `cursor` on: one page of the listing (SPEC §12). */
export async function listClientsPage(cursor: string, signal?: AbortSignal): Promise<ListClientsResult> {
  const response = await fetch(`/mdp/clients?limit=${CLIENTS_PAGE}&cursor=${encodeURIComponent(cursor)}`, {
    headers: authHeaders(),
    signal,
    cache: 'no-store',
  });
  if (response.status === 401) throw new Unauthorized();
  if (!response.ok) throw new Error(`/mdp/clients answered ${response.status}`);
  return (await response.json()) as ListClientsResult;
}

/** `GET /mdp/meta`: the metadata document (open to all, like the endpoints it lists). */
export async function readMeta(): Promise<unknown> {
  const response = await fetch('/mdp/meta', { headers: authHeaders() });
  if (!response.ok) throw new Error(`/mdp/meta answered ${response.status}`);
  return response.json();
}
