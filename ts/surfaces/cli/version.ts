/** The package version, set at build time (tsup's `define`). */
declare const __PROCWARD_VERSION__: string;
export const version = typeof __PROCWARD_VERSION__ === 'string' ? __PROCWARD_VERSION__ : '0.0.0-dev';
