import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    // Each test starts nats-server processes and waits on TTLs of 2 s; a busy 2-core machine needs room.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
