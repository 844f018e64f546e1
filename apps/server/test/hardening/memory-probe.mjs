// Preloaded into the mdp-server child of the hardening tests (`node --expose-gc --import
// memory-probe.mjs dist/cli.js …`): answers `{ id, type: 'memory' }` over IPC with the process's
// memory, measured in the server itself and never on its request path. `gc: true` collects first
// (three times, a turn of the event loop apart, so weak references, finalizers and handles closed
// just before free what they hold).
process.channel?.unref();
process.on('message', async (message) => {
  if (message?.type !== 'memory') return;
  if (message.gc && globalThis.gc) {
    // Turns of the event loop first: handles closed in this turn (a socket destroyed just before the
    // question came) release their buffers only in its close phase.
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      globalThis.gc();
    }
  }
  const memory = process.memoryUsage();
  process.send?.({
    id: message.id,
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    external: memory.external,
    arrayBuffers: memory.arrayBuffers,
    // Kilobytes on Linux: the largest resident set the process has had so far.
    maxRss: process.resourceUsage().maxRSS * 1024,
  });
});
// The test runner went away: stop the server the way an operator would.
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
