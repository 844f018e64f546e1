// Runs inside the headless browser, on a page whose origin differs from the MDP server's.
// Plain browser JavaScript (no modules, no build step); the test drives it through window.mdpPage.
// Every network call is bounded by a time-out so a broken server fails the test quickly.
(() => {
  const TIMEOUT_MS = 4000;

  const state = {
    /** Pings the websocket client answered with pong. */
    wsPongs: 0,
    /** callClient messages the websocket client answered. */
    wsCalls: [],
    /** Close events of the page's MDP websockets, in order. */
    wsClosed: [],
    /** Every MDP websocket the page opened. */
    sockets: [],
    /** HTTP loop client: see startPolling. */
    loop: undefined,
    /** Headers sent with every fetch (see useHeaders). */
    headers: {},
  };

  /** fetch with credentials and a time-out; a network or CORS failure becomes an Error naming the call. */
  async function mdpFetch(url, init = {}) {
    const what = `${init.method ?? 'GET'} ${new URL(url).pathname}`;
    let response;
    try {
      response = await fetch(url, { credentials: 'include', signal: AbortSignal.timeout(TIMEOUT_MS), ...init, headers: { ...state.headers, ...init.headers } });
    } catch (error) {
      throw new Error(`fetch ${what} failed (CORS or network): ${error?.message}`);
    }
    const text = await response.text();
    return { status: response.status, contentType: response.headers.get('content-type'), cacheControl: response.headers.get('cache-control'), text };
  }

  /** The answer both clients give to a skill read: shows what the call carried. */
  function answer(call, transport) {
    return [
      `# ${document.title}`,
      `transport: ${transport}`,
      `origin: ${location.origin}`,
      `path: ${call.path}`,
      `token: ${call.auth?.token || 'none'}`,
      `scheme: ${call.auth?.scheme || 'none'}`,
    ].join('\n');
  }

  /** POST /mdp/auth from this origin: the server answers with the HttpOnly mdp_auth cookie. */
  async function bootstrapCookie(mdpHttp, auth) {
    const res = await mdpFetch(`${mdpHttp}/mdp/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth }),
    });
    return { status: res.status, cacheControl: res.cacheControl, body: res.text, documentCookie: document.cookie };
  }

  /** DELETE /mdp/auth: the server clears the cookie. */
  async function clearCookie(mdpHttp) {
    const res = await mdpFetch(`${mdpHttp}/mdp/auth`, { method: 'DELETE' });
    return { status: res.status, body: res.text };
  }

  /** A credentialed cross-origin skill read, as any browser page could make. */
  async function readSkill(url) {
    const res = await mdpFetch(url);
    return { status: res.status, contentType: res.contentType, text: res.text };
  }

  /** Send these headers (e.g. Authorization) with every later fetch, the HTTP loop's included. */
  function useHeaders(headers) {
    state.headers = headers;
  }

  /**
   * Open the MDP websocket (the browser sends the mdp_auth cookie with the upgrade), register
   * `descriptor` (with `auth` in the message, when given), answer ping with pong and callClient
   * with callClientResult. Resolves once the registerClient frame is sent; the test waits for the
   * server to list the client.
   */
  function openWebSocketClient(wsUrl, descriptor, auth) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(wsUrl);
      state.sockets.push(ws);
      const timer = setTimeout(() => reject(new Error(`websocket ${wsUrl} did not open in ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
      ws.onopen = () => {
        clearTimeout(timer);
        ws.send(JSON.stringify({ type: 'registerClient', client: descriptor, ...(auth ? { auth } : {}) }));
        resolve();
      };
      ws.onerror = () => {
        clearTimeout(timer);
        reject(new Error(`websocket ${wsUrl} failed`));
      };
      ws.onclose = (event) => {
        state.wsClosed.push({ clientId: descriptor.id, code: event.code, reason: event.reason });
      };
      ws.onmessage = (event) => {
        const message = JSON.parse(event.data);
        if (message.type === 'ping') {
          ws.send(JSON.stringify({ type: 'pong', timestamp: message.timestamp }));
          state.wsPongs += 1;
        } else if (message.type === 'callClient') {
          state.wsCalls.push(message);
          ws.send(JSON.stringify({ type: 'callClientResult', requestId: message.requestId, ok: true, data: answer(message, 'websocket') }));
        }
      };
    });
  }

  /** Close every MDP websocket the page opened. */
  function closeWebSockets() {
    for (const ws of state.sockets) ws.close(1000, 'page done');
  }

  // ---------------------------------------------------------------------------------------------
  // HTTP loop

  /** POST /connect → {status, sessionId}. */
  async function loopConnect(mdpHttp) {
    const res = await mdpFetch(`${mdpHttp}/mdp/http-loop/connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    return { status: res.status, sessionId: res.status === 200 ? JSON.parse(res.text).sessionId : undefined, body: res.text };
  }

  /** POST /send with the session id in the x-mdp-session-id header (a preflighted request). */
  async function loopSend(mdpHttp, sessionId, message) {
    const res = await mdpFetch(`${mdpHttp}/mdp/http-loop/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId },
      body: JSON.stringify({ message }),
    });
    return { status: res.status, body: res.text };
  }

  /** GET /poll with the session id in the query. */
  async function loopPoll(mdpHttp, sessionId, waitMs) {
    const res = await mdpFetch(`${mdpHttp}/mdp/http-loop/poll?sessionId=${encodeURIComponent(sessionId)}&waitMs=${waitMs}`);
    return { status: res.status, message: res.status === 200 ? JSON.parse(res.text).message : undefined, body: res.text };
  }

  /**
   * Poll until stopped: answer callClient with callClientResult (and ping with pong, should the
   * server send one). Every poll and send status is recorded in state.loop so the test can check
   * them; an unexpected status or a failed fetch stops the loop and is recorded as `error`.
   */
  function startPolling(mdpHttp, sessionId) {
    const loop = { sessionId, running: true, polls: [], sends: [], calls: [], error: undefined, done: undefined };
    state.loop = loop;
    loop.done = (async () => {
      while (loop.running) {
        const polled = await loopPoll(mdpHttp, sessionId, 1000);
        loop.polls.push(polled.status);
        if (polled.status === 204) continue;
        if (polled.status !== 200) {
          if (loop.running) loop.error = `poll answered ${polled.status} ${polled.body}`;
          return;
        }
        const message = polled.message;
        let reply;
        if (message.type === 'callClient') {
          loop.calls.push(message);
          reply = { type: 'callClientResult', requestId: message.requestId, ok: true, data: answer(message, 'http-loop') };
        } else if (message.type === 'ping') {
          reply = { type: 'pong', timestamp: message.timestamp };
        }
        if (reply) {
          const sent = await loopSend(mdpHttp, sessionId, reply);
          loop.sends.push(sent.status);
          if (sent.status !== 202) {
            loop.error = `send ${reply.type} answered ${sent.status} ${sent.body}`;
            return;
          }
        }
      }
    })().catch((error) => {
      loop.error = String(error?.message);
    });
  }

  /**
   * Stop polling, POST /disconnect, wait for the loop's last poll to end, then poll once more.
   * Returns the disconnect status and the status of that poll after the disconnect.
   */
  async function loopDisconnect(mdpHttp) {
    const loop = state.loop;
    loop.running = false;
    const res = await mdpFetch(`${mdpHttp}/mdp/http-loop/disconnect`, {
      method: 'POST',
      headers: { 'x-mdp-session-id': loop.sessionId },
    });
    await loop.done;
    const after = await loopPoll(mdpHttp, loop.sessionId, 0);
    return { disconnect: res.status, pollAfter: after.status, pollAfterBody: after.body, error: loop.error };
  }

  /** What the HTTP loop client has done so far (plain JSON for the test). */
  function loopState() {
    const loop = state.loop;
    return loop && { sessionId: loop.sessionId, running: loop.running, polls: loop.polls, sends: loop.sends, calls: loop.calls, error: loop.error };
  }

  function wsState() {
    return { pongs: state.wsPongs, calls: state.wsCalls, closed: state.wsClosed };
  }

  window.mdpPage = {
    useHeaders,
    bootstrapCookie,
    clearCookie,
    readSkill,
    openWebSocketClient,
    closeWebSockets,
    wsState,
    loopConnect,
    loopSend,
    loopPoll,
    startPolling,
    loopDisconnect,
    loopState,
  };
  document.body.dataset.ready = 'yes';
})();
