import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.ts'],
    // Native addons and process APIs misbehave under worker threads.
    pool: 'forks',
    // Generous: a test returns as soon as its conditions hold; the bound matters only beside
    // CPU hogs (the suite must pass with two of them running) or when a test is failing.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
