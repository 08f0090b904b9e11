/** A throwaway podman API service for the container tests (see podman.mjs). */
export function which(name: string): string | null;
export const PODMAN: string | null;
export const RUNC: string | null;
export const DOCKER: string | null;
export const BUSYBOX: string | null;
/** What the container tests need and is missing here (empty when they can run). */
export const missingForEngine: string[];
export interface TestPodman {
  dir: string;
  /** The service's socket as a URL (`unix:///…/api.sock`). */
  url: string;
  image: string;
  /** The client the tests drive: docker when installed, else podman, with the service's URL. */
  client: { engine: string; host: string };
  podman: string;
  /** Runs the client with the service's URL; resolves with its trimmed stdout. */
  cli(args: string[]): Promise<string>;
  /** Starts a uniquely named container that sleeps until stopped (removed by `stop`). */
  container(): Promise<string>;
  /** Removes the containers and the image, stops the service by its PID, removes the directory. */
  stop(): Promise<void>;
}
export function startPodman(): Promise<TestPodman>;
