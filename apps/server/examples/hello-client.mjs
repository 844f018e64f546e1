// A tiny MDP client: connects over the websocket, registers one skill and answers reads of it.
// Usage: node apps/server/examples/hello-client.mjs [ws://127.0.0.1:47372]
import { WebSocket } from 'ws';

const url = process.argv[2] ?? 'ws://127.0.0.1:47372';
const socket = new WebSocket(url);

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
  console.log('registered client "hello"; try: curl http://127.0.0.1:47372/skills/hello/greeting?name=you');
});

socket.on('message', (frame) => {
  const message = JSON.parse(frame.toString());
  if (message.type === 'ping') {
    socket.send(JSON.stringify({ type: 'pong', timestamp: message.timestamp }));
  } else if (message.type === 'callClient') {
    const name = message.query?.name ?? 'world';
    socket.send(
      JSON.stringify({ type: 'callClientResult', requestId: message.requestId, ok: true, data: `# Hello, ${name}!\n` }),
    );
  }
});

socket.on('close', (code, reason) => console.log(`closed: ${code} ${reason}`));
process.on('SIGINT', () => socket.close());
process.on('SIGTERM', () => socket.close());
