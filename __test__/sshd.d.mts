/** A throwaway sshd on 127.0.0.1 (see sshd.mjs). */
export const SSHD: string;
export const haveSshd: boolean;
export interface TestSshd {
  port: number;
  user: string;
  identityFile: string;
  /** Client options: trust the throwaway host key. */
  options: string[];
  start(): Promise<void>;
  /** Stops sshd and every connection it serves. */
  stop(): Promise<void>;
}
export function testSshd(dir: string): Promise<TestSshd>;
