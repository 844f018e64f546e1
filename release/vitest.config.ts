import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Test files of a worker share its module cache: loading every package once per file was most of
    // the suite's time. Tests restore what they change (timers, env), so nothing leaks between files.
    isolate: false,
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
