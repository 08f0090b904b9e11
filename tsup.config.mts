import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

export default defineConfig([
  {
    // The framework adapters (procward/ai-sdk, procward/langchain, procward/openai-agents)
    // import the library as 'procward', kept external: they load the application's own
    // dist/index.*, never a second bundled copy, and leave the frameworks (optional peers)
    // to the application. Their types resolve 'procward' to the sources while building.
    entry: { index: 'ts/index.ts', 'ai-sdk': 'ts/adapters/ai-sdk.ts', langchain: 'ts/adapters/langchain.ts', 'openai-agents': 'ts/adapters/openai-agents.ts' },
    format: ['esm', 'cjs'],
    dts: { compilerOptions: { paths: { procward: ['./ts/index.ts'] } } },
    shims: true,
    clean: true,
    target: 'node20',
    // The generated napi loader (`../index.js` from ts/) must stay outside the bundle; only
    // that path: a pattern on any `index.js` silently dropped our own `ts/**/index.ts` modules.
    external: [/^\.\.\/index\.js$/, 'procward', 'ai', /^@langchain\/core(\/|$)/, '@openai/agents'],
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
