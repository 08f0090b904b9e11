import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.ts'],
    // Native addons and process APIs misbehave under worker threads.
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
