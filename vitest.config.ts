import { defineConfig } from 'vitest/config';

// One run over every package and app, so CI gets a single total.
export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'bench', 'release'],
  },
});
