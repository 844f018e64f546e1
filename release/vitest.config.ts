import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each file drives pnpm, npm or tsc in child processes: seconds, not milliseconds.
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
