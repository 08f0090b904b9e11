import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

export default defineConfig([
  {
    entry: { index: 'ts/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    shims: true,
    clean: true,
    target: 'node20',
    // The generated napi loader (`../index.js` from ts/) must stay outside the bundle; only
    // that path: a pattern on any `index.js` silently dropped our own `ts/**/index.ts` modules.
    external: [/^\.\.\/index\.js$/],
  },
  {
    entry: { cli: 'ts/surfaces/cli.ts' },
    format: ['esm'],
    shims: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
    define: { __PROCWARD_VERSION__: JSON.stringify(version) },
    external: [/^\.\.\/index\.js$/],
  },
]);
