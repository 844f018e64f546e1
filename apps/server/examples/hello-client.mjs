// A tiny MDP client: connects over the websocket, registers one skill and answers reads of it.
// Usage: node apps/server/examples/hello-client.mjs [ws://127.0.0.1:47372] [--token <token>]
import { parseArgs } from 'node:util';
import { WebSocket } from 'ws';

let args;
try {
  args = parseArgs({ options: { token: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
} catch (error) {
  console.error(`hello-client: ${error.message}`);
  process.exit(64);
}
if (args.values.help || args.positionals.length > 1) {
  console.log('Usage: node hello-client.mjs [ws://127.0.0.1:47372] [--token <token>]');
  process.exit(args.values.help ? 0 : 64);
}
const url = args.positionals[0] ?? 'ws://127.0.0.1:47372';
const token = args.values.token;
const socket = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});

// The server handles a session's messages in order: its pong to this ping says the registration
// before it was applied (a refused one closes the socket instead).
const registrationPing = Date.now();

socket.on('open', () => {
  socket.send(
    JSON.stringify({
      type: 'registerClient',
      client: {
        id: 'hello',
        name: 'Hello client',
        paths: [{ type: 'skill', path: '/greeting/skill.md', description: 'Says hello' }],
      },
    }),
  );
  socket.send(JSON.stringify({ type: 'ping', timestamp: registrationPing }));
});

/** `text` quoted for a POSIX shell. */
const quote = (text) => `'${text.replace(/'/g, `'\\''`)}'`;

function readCommand() {
  const base = new URL(url);
  base.protocol = base.protocol === 'wss:' ? 'https:' : 'http:';
  const header = token ? ` -H ${quote(`Authorization: Bearer ${token}`)}` : '';
  return `curl${header} ${quote(`${base.origin}/skills/hello/greeting?name=you`)}`;
}

socket.on('message', (frame) => {
  const message = JSON.parse(frame.toString());
  if (message.type === 'pong' && message.timestamp === registrationPing) {
    console.log(`registered client "hello"; read its skill with:\n  ${readCommand()}`);
  } else if (message.type === 'ping') {
    socket.send(JSON.stringify({ type: 'pong', timestamp: message.timestamp }));
  } else if (message.type === 'callClient') {
    const name = message.query?.name ?? 'world';
    socket.send(JSON.stringify({ type: 'callClientResult', requestId: message.requestId, ok: true, data: `# Hello, ${name}!\n` }));
  }
});

socket.on('error', (error) => console.error(`hello-client: ${error.message}`));
socket.on('close', (code, reason) => {
  console.log(`closed: ${code} ${reason}`);
  process.exitCode = code === 1000 || code === 1005 ? 0 : 1;
});
process.on('SIGINT', () => socket.close());
process.on('SIGTERM', () => socket.close());
