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
    // The generated napi loader must stay a runtime require: it locates the .node file
    // relative to itself.
    external: [/index\.js$/],
  },
  {
    entry: { cli: 'ts/surfaces/cli.ts' },
    format: ['esm'],
    shims: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
    define: { __PROCWARD_VERSION__: JSON.stringify(version) },
    external: [/index\.js$/],
  },
]);
