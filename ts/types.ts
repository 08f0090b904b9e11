/** The public shapes of the registry's options and results. Times in milliseconds. */
export type * from './types/kill.js';
export type * from './types/options.js';
export type * from './types/output.js';
export type * from './types/session.js';
export type * from './types/snake.js';
export type * from './types/spawn.js';
export type * from './types/terminal.js';
