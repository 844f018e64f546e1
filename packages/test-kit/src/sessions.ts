/** The sessions a router opens and ends, from its session events: what transports' tests look at. */
import type { Router, Session } from '@mdp/core';
import { Inbox } from './waiters.js';

export interface SessionWatch {
  /** Every session opened since the watch began, in order. */
  readonly opened: Session[];
  /** The only session opened so far (throws when there are more or none). */
  readonly only: Session;
  /** The session with this id (throws when none was opened). */
  session(id: string): Session;
  /** The next session to open. */
  nextOpened(): Promise<Session>;
  /** Resolves once `session` has ended (at once when it already has), with the reason when it was seen. */
  ended(session: Session): Promise<string | undefined>;
  /** Stop watching. */
  stop(): void;
}

/** Watch `router`'s sessions through `onSessionEvent`. */
export function watchSessions(router: Router): SessionWatch {
  const opened = new Inbox<Session>();
  const ends = new Inbox<{ session: Session; reason: string }>();
  const stop = router.onSessionEvent((event) => {
    if (event.type === 'open') opened.push(event.session);
    else ends.push({ session: event.session, reason: event.reason });
  });
  return {
    opened: opened.items,
    get only() {
      if (opened.items.length !== 1) throw new Error(`expected one session, have ${opened.items.length}`);
      return opened.items[0] as Session;
    },
    session(id) {
      const found = opened.items.find((candidate) => candidate.id === id);
      if (!found) throw new Error(`no session ${id}`);
      return found;
    },
    nextOpened: () => opened.next(),
    async ended(session) {
      const seen = ends.items.find((end) => end.session === session);
      if (seen) return seen.reason;
      if (session.closed) return undefined;
      return (await ends.next((end) => end.session === session)).reason;
    },
    stop,
  };
}
