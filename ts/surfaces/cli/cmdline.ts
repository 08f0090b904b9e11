/** The words after `--` of `procward start` as one command line for the job's shell. */
import shellQuote from 'shell-quote';

/**
 * Words as one command line for cmd.exe (Windows' default shell), each reaching the program
 * as one argument. A word of only `[\w\-+=:./\\@]` is kept as it is; any other is quoted as
 * programs split their command line (CommandLineToArgvW: `"` becomes `\"`, and backslashes
 * before a quote or the closing quote are doubled), then every cmd metacharacter in it,
 * the quotes included, gets cmd's escape `^`, so cmd never enters its quote mode (where `\"`
 * would end it) and passes the quoted word on with the carets removed.
 */
function cmdCommandLine(words: string[]): string {
  const quote = (w: string) => `"${w.replace(/(\\*)"/g, '$1$1\\"').replace(/(\\+)$/, '$1$1')}"`.replace(/[()\][%!^"`<>&|;, *?\t]/g, '^$&');
  return words.map((w) => (/^[\w\-+=:./\\@]+$/.test(w) ? w : quote(w))).join(' ');
}

/** One word is the command as written; several are quoted so each reaches the program as one argument. */
export function commandLine(words: string[]): string {
  return words.length === 1 ? (words[0] as string) : process.platform === 'win32' ? cmdCommandLine(words) : shellQuote.quote(words);
}
