import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Test files of a worker share its module cache: loading every package once per file was most of
    // the suite's time. Tests restore what they change (timers, env), so nothing leaks between files.
    isolate: false,
    include: ['test/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
  },
});
