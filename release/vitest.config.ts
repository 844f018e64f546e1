import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each file drives pnpm, npm or tsc in child processes: seconds, not milliseconds.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // After every other project, alone: these files install, deploy and rebuild the workspace
    // (pnpm re-links the injected packages), which would pull dist/ and node_modules out from
    // under tests running beside them.
    sequence: { groupOrder: 1 },
  },
});
