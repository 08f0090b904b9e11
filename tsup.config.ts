import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'ts/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    shims: true,
    clean: true,
    target: 'node20',
    // The generated napi loader must stay a runtime require: it locates the .node file
    // relative to itself.
    external: [/index\.js$/],
  },
  {
    entry: { cli: 'ts/cli.ts' },
    format: ['esm'],
    shims: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
    external: [/index\.js$/],
  },
]);
