// The shell commands of the behaviour suite, by platform: the same promise is tested with
// cmd.exe on Windows (the core's default shell there) and with the POSIX shell elsewhere.
// Each command's output is plain ASCII; Windows ends lines with CR LF (see `lines`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const isWindows = process.platform === 'win32';

/**
 * A test program of scripts/platforms/*.c, built by scripts/platforms/windows.sh into `bin/`
 * beside this file.
 */
function testProgram(name) {
  const exe = fileURLToPath(new URL(`./bin/${name}`, import.meta.url));
  if (!existsSync(exe)) throw new Error(`${exe} is missing: scripts/platforms/windows.sh builds it from scripts/platforms/${name.replace(/\.exe$/, '.c')}`);
  return exe;
}

/**
 * Registry options of PTY sessions. Under Wine (`WINEPREFIX` is set: scripts/platforms/
 * windows.sh sets it, and Wine passes the Unix environment on) the shell is `conshim.exe`
 * (scripts/platforms/conshim.c) running cmd: Wine 8 gives a pseudoconsole's first process
 * no standard handles, which Windows does. Elsewhere the default shell.
 */
export function ptyRegistryOptions() {
  if (!isWindows || !process.env.WINEPREFIX) return {};
  return { shell: testProgram('conshim.exe'), shellArgs: ['cmd', '/d', '/s', '/c'] };
}

/** Prints `text` (one word, no shell metacharacters). */
export function echo(text) {
  return `echo ${text}`;
}

/** Prints `out` on stdout and `err` on stderr, then exits with `code`. */
export function outErrExit(out, err, code) {
  // cmd keeps the space before `1>&2` in the echoed text: `lines` trims it.
  return isWindows ? `echo ${out}& echo ${err} 1>&2& exit /b ${code}` : `echo ${out}; echo ${err} 1>&2; exit ${code}`;
}

/** Sleeps `seconds` (ping waits one second between its echo requests on Windows). */
export function sleep(seconds) {
  return isWindows ? `ping -n ${seconds + 1} 127.0.0.1 >nul` : `sleep ${seconds}`;
}

/**
 * Starts a grandchild that holds the job's output pipe for `seconds` and outlives the job,
 * then prints `started` and exits 0: `start /b` of a long `ping` on Windows (its replies go
 * to the pipe), `sleep &` on sh.
 */
export function orphanedGrandchild(seconds) {
  return isWindows ? `start /b ping -n ${seconds + 1} 127.0.0.1& echo started` : `sleep ${seconds} & echo started`;
}

/**
 * A 3-level tree whose deepest member ignores the graceful signal, so only the forced step
 * ends it: job shell → shell → member. Windows: cmd → cmd → ignorebreak.exe
 * (scripts/platforms/ignorebreak.c: prints `ready`, swallows Ctrl-Break and Ctrl-C in a
 * console control handler, sleeps). sh: sh → sh (TERM ignored, inherited through exec)
 * → sleep. The member (its shell on sh) prints `ready` once the graceful signal is ignored.
 */
export function treeIgnoringGraceful(seconds) {
  if (isWindows) return `cmd /d /c "${testProgram('ignorebreak.exe')}" ${seconds}& ping -n ${seconds + 1} 127.0.0.1 >nul`;
  return `sh -c "trap '' TERM; echo ready; sleep ${seconds} & wait" & sleep ${seconds}`;
}

/** Prints the prompt `name? `, reads a line from stdin and prints `got <line>`. */
export function promptAndAnswer() {
  // cmd expands %X% when it reads the line, before set /p ran: `call` expands it again after.
  return isWindows ? 'set /p X=name? & call echo got %X%' : `printf 'name? '; read x; echo "got $x"`;
}

/**
 * Prints `first`, waits until a file named `gate` exists in the working directory, prints
 * `second` and exits with `code`: gated.cjs in the Node that runs the suite, started
 * through the platform's shell (double quotes mean the same to sh and cmd here).
 */
export function gatedExit(code) {
  return `"${process.execPath}" "${fileURLToPath(new URL('./gated.cjs', import.meta.url))}" ${code}`;
}

/** The output's lines without the CR of Windows line ends, and without trailing blanks. */
export function lines(text) {
  return text
    .replace(/\r/g, '')
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '');
}
