import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Test files of a worker share its module cache: loading every package once per file was most of
    // the suite's time. Tests restore what they change (timers, env), so nothing leaks between files.
    isolate: false,
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    // End-to-end tests spawn and start real servers; on a loaded 2-core machine one start can take
    // seconds. This bounds a hung test, it measures nothing.
    testTimeout: 20_000,
    // In CI only, a test that fails is run once more: this project's process tests (fleets of
    // servers and a nats-server, 500 readers against a drain deadline) share two cores with the rest
    // of the suite, and a load spike can push one past its deadline. A test that fails twice fails
    // the run; vitest's report names every test that needed the second try.
    retry: process.env.CI ? 1 : 0,
  },
});
