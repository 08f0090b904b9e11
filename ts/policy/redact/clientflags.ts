/**
 * The short password flags of each client program: `-p<pw>` of mysql, `-u user:pw` of curl,
 * `-a` of redis-cli, ... One rule per program family; a program without a rule of its own
 * gets the default (`login -p` of registry clients, `-u user:password`).
 */
import { afterColon, afterUser, type Span, tailOf, type Word, whole } from './shellwords.js';

/** A short flag word (`-pSECRET`, `-su`) of a segment and what surrounds it. */
export interface ShortFlag {
  /** The program (base name). */
  prog: string;
  /** The word holding the flag. */
  word: Word;
  /** The flag's letters, without the leading `-`. */
  flags: string;
  /** The segment's arguments (after the program) and the flag's index among them. */
  args: Word[];
  k: number;
  /** The arguments that are not flags (subcommands such as `login`). */
  sub: Set<string>;
}

/** A rule's answer: the span to mask, and `last` when the rest of the segment holds no more. */
type Rule = (f: ShortFlag) => { span: Span | undefined; last?: boolean } | undefined;

/** Programs whose `-u`/`--user` names a local user or `uid:gid`, never `user:password`. */
export const LOCAL_USER = new Set('docker podman nerdctl kubectl sudo su ps pgrep pkill top htop runuser chroot setpriv crontab systemctl journalctl loginctl useradd usermod id who lsof fuser find chown install'.split(' '));

const next = (f: ShortFlag) => f.args[f.k + 1];
const found = (span: Span | undefined) => ({ span });

/** `-pSECRET` or a cluster ending in the letter followed by the next word (`-su u:p`). */
function attached(f: ShortFlag, letter: string): Span | undefined {
  const at = f.flags.indexOf(letter);
  if (at < 0 || !/^[A-Za-z]*$/.test(f.flags.slice(0, at))) return undefined;
  const rest = f.flags.slice(at + 1);
  return rest !== '' ? tailOf(f.word, rest) : whole(next(f));
}

/** The value glued to the letter only (`-pSECRET`; `-p` alone prompts). */
const glued =
  (letter: string): Rule =>
  (f) =>
    f.flags.startsWith(letter) && f.flags.length > 1 ? found(tailOf(f.word, f.flags.slice(1))) : undefined;
/** The letter glued or followed by the secret (`-aSECRET`, `-a SECRET`). */
const gluedOrNext =
  (letter: string): Rule =>
  (f) =>
    f.flags.startsWith(letter) ? found(attached(f, letter)) : undefined;
/** Exactly one of the flags, followed by the secret (`-P SECRET`). */
const nextWord =
  (...exact: string[]): Rule =>
  (f) =>
    exact.includes(f.flags) ? found(whole(next(f))) : undefined;

const curl: Rule = (f) => {
  const at = f.flags.search(/[uU]/);
  // Only options without an argument may come before it in a cluster (`-sSfu`).
  if (at < 0 || !/^[sSfLkvIiNgGjJlnOqRZ]*$/.test(f.flags.slice(0, at))) return undefined;
  const rest = f.flags.slice(at + 1);
  return found(rest !== '' ? afterColon(f.word, rest) : afterColon(next(f)));
};

const openssl: Rule = (f) => {
  if (f.flags === 'k' || f.flags === 'K') return found(whole(next(f)));
  const n = next(f);
  if (/^(?:pass|passin|passout)$/.test(f.flags) && n?.value.startsWith('pass:')) return found(tailOf(n, n.value.slice(5)));
  return undefined;
};

/** htpasswd -b[c] FILE USER PASSWORD, htpasswd -nb USER PASSWORD: the last argument. */
const htpasswd: Rule = (f) => {
  if (!/^[a-zA-Z]*b[a-zA-Z]*$/.test(f.flags)) return undefined;
  const positional = f.args.slice(f.k + 1).filter((x) => !x.value.startsWith('-'));
  return { span: whole(positional[positional.length - 1]), last: true };
};

const RULES = new Map<string, Rule>();
const family = (names: string, rule: Rule) => {
  for (const n of names.split(' ')) RULES.set(n, rule);
};
family('mysql mysqldump mysqladmin mysqlimport mysqlshow mysqlcheck mariadb mariadb-dump mariadb-admin 7z 7za 7zz', glued('p'));
family('curl', curl);
family('redis-cli', gluedOrNext('a'));
family('mongo mongosh mongodump mongorestore mongoexport mongoimport sshpass', gluedOrNext('p'));
family('ldapsearch ldapadd ldapmodify ldapdelete ldappasswd ldapwhoami', nextWord('w'));
family('zip unzip sqlcmd bcp osql', nextWord('P'));
// -N new passphrase, -P old passphrase.
family('ssh-keygen', nextWord('N', 'P'));
family('lftp', (f) => (f.flags === 'u' ? found(afterUser(next(f))) : undefined));
family('smbclient', (f) => (f.flags === 'U' ? found(afterColon(next(f), next(f)?.value.replace('%', ':'))) : undefined));
family('openssl', openssl);
family('keytool', (f) => (/^(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|password)$/.test(f.flags) ? found(whole(next(f))) : undefined));
family('htpasswd', htpasswd);

const REGISTRY_CLIENTS = /^(?:docker|podman|nerdctl|helm|buildah|skopeo|oras|crane|regctl)$/;

/** Programs without a rule of their own: `login -p`, and `-u user:password` unless a local user. */
function fallback(f: ShortFlag): Span[] {
  const spans: (Span | undefined)[] = [];
  if (REGISTRY_CLIENTS.test(f.prog) && f.sub.has('login') && f.flags.startsWith('p')) spans.push(attached(f, 'p'));
  if ((f.prog === 'az' || f.prog === 'cf') && f.sub.has('login') && f.flags === 'p') spans.push(whole(next(f)));
  if (f.flags === 'u' && !LOCAL_USER.has(f.prog)) spans.push(afterUser(next(f)));
  return spans.filter((s): s is Span => s !== undefined);
}

/** Spans of one short flag word; `last`: no later word of the segment needs looking at. */
export function shortFlagSpans(f: ShortFlag): { spans: Span[]; last: boolean } {
  const rule = RULES.get(f.prog);
  if (!rule) return { spans: fallback(f), last: false };
  const hit = rule(f);
  return { spans: hit?.span ? [hit.span] : [], last: hit?.last === true };
}

/** Programs with rules of their own (found after a wrapper or inside another command). */
export const CLIENTS = new Set([
  ...RULES.keys(),
  ...'psql pg_dump gpg vault bao snyk ngrok wget'.split(' '),
]);
