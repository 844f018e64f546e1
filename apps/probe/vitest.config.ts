import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    // End-to-end tests spawn and start real servers; on a loaded 2-core machine one start can take
    // seconds. This bounds a hung test, it measures nothing.
    testTimeout: 20_000,
  },
});
