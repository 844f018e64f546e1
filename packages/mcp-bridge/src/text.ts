/**
 * Text that comes from clients (names, descriptions) is untrusted: a page or an app wrote it, not
 * the user. Before an agent reads it, it is cleaned of control characters, capped in length and
 * labelled with the client it came from, so that a description cannot pose as an instruction
 * from the user or flood the agent's context.
 */

/** Longest client name or id quoted in a label, characters. */
export const LABEL_PART_MAX_CHARS = 64;
/** Clients named in one label; the rest are counted. */
const LABEL_MAX_CLIENTS = 5;

// C0 and C1 controls except tab and newline, plus the bidi overrides that can disguise text.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` without control characters, at most `max` characters (an ellipsis marks a cut). */
export function capText(text: string, max: number): string {
  const clean = text.replace(CONTROL, '').trim();
  if (clean.length <= max) return clean;
  return `${clean.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

/** One line: newlines and tabs become spaces too. */
export function capLine(text: string, max: number): string {
  return capText(text.replace(/[\t\n]+/g, ' '), max);
}

export interface LabelClient {
  readonly id: string;
  readonly name: string;
}

/** `client "todo" (Todo app)`, `clients "a", "b" and 3 more`. */
export function clientLabel(clients: readonly LabelClient[]): string {
  const quote = (client: LabelClient): string => {
    const id = JSON.stringify(capLine(client.id, LABEL_PART_MAX_CHARS));
    const name = capLine(client.name, LABEL_PART_MAX_CHARS);
    return name && name !== client.id ? `${id} (${name})` : id;
  };
  if (clients.length === 1) return `client ${quote(clients[0] as LabelClient)}`;
  const named = clients.slice(0, LABEL_MAX_CLIENTS).map(quote);
  const more = clients.length - named.length;
  return `clients ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/**
 * The description an agent reads for something a client published: what it is and whose it is
 * first, then the client's own words, capped and marked as the client's.
 */
export function labelledDescription(what: string, clients: readonly LabelClient[], description: string | undefined, max: number): string {
  const head = `${what} of MDP ${clientLabel(clients)}.`;
  const own = description === undefined ? '' : capText(description, max);
  if (own === '') return head;
  return `${head} ${clients.length === 1 ? 'Its' : 'Their'} description: ${own}`;
}
