/**
 * What names a credential and what value is none: the predicates every redaction rule
 * shares (`assignments.ts`, `printers.ts`, `command.ts`, `tokens.ts`).
 */

/** Names that look like credentials (`*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*_API_KEY`, ...), upper snake case. */
export const CREDENTIAL_NAME =
  /(?:^|_)(?:TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASS|PASSPHRASE|API_?KEY|ACCESS_?KEY|ACCOUNT_?KEY|SECRET_?KEY|MASTER_?KEY|HMAC_?KEY|ENCRYPTION_?KEY|APP_?KEY|SIGNATURE|PRIVATE_?KEY|CLIENT_SECRET|CREDENTIALS?|AUTH_?TOKEN|SESSION_?KEY|SIGNING_?KEY|WEBHOOK_?SECRET|DSN)(?:_|$)|(?:PASSWORD|PASSWD)$/i;

/** Suffixes that name something about a credential rather than the credential (`TOKEN_TTL`, `PASSWORD_FILE`). */
const ABOUT_A_CREDENTIAL =
  /_(?:TYPE|TTL|ID|URL|URI|FILE|PATH|DIR|LENGTH|LEN|SIZE|EXPIRY|EXPIRES(?:_IN|_AT)?|ENDPOINT|HOST|PORT|NAME|USER|USERNAME|COUNT|LIMIT|TIMEOUT|MIN|MAX|MIN_LENGTH|ENABLED|HEADER|PREFIX|FORMAT|VERSION|MODE|REGION|STDIN|FD|PROMPT|CMD|COMMAND|HELPER|STORE|SOURCE|POLICY|RESET|HINT|PROVIDER|ENV|THRESHOLD)$/i;

/**
 * Whether `name` names a credential. Accepts `UPPER_SNAKE`, `lower_snake`, `camelCase` and
 * `kebab-case` (`apiKey`, `client-secret`).
 */
export function isCredentialName(name: string): boolean {
  // Output repeats the same few names: remember the answers (bounded).
  let known = verdicts.get(name);
  if (known === undefined) {
    if (verdicts.size >= 4096) verdicts.clear();
    known = credentialName(name);
    verdicts.set(name, known);
  }
  return known;
}

const verdicts = new Map<string, boolean>();

function credentialName(name: string): boolean {
  // `spring.datasource.password`, `/prod/db/password` (a parameter path): the last part names it.
  const snake = name
    .replace(/^.*[./](?=[A-Za-z_])/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toUpperCase();
  // What a peer accepts (`Accept-Signature: rsa-pss-sha512`) names an algorithm, not a credential.
  if (snake.startsWith('ACCEPT_')) return false;
  // The id of a private key names which key signs, and comes beside it (a service-account file).
  if (/(?:PRIVATE|SECRET)_KEY_ID$/.test(snake)) return true;
  // `MYSQL_PWD` is a password; `PWD` and `OLDPWD` are directories.
  const pwd = /_PWD$/.test(snake) && snake !== 'OLDPWD';
  return (pwd || CREDENTIAL_NAME.test(snake)) && !ABOUT_A_CREDENTIAL.test(snake);
}

/**
 * A value that is not a secret when printed: empty, a short number, a boolean, a
 * placeholder or reference, a file path, code. `command`: in a command's prefix every
 * literal is the secret (`PGPASSWORD=123 psql`), so only empty values and references pass.
 */
export function notASecret(raw: string, command = false): boolean {
  const v = raw.replace(/^["']|["'],?$/g, '').trim();
  if (v === '' || v.includes('…') || /^\*\*\*(?:\s|$)/.test(v) || v.startsWith('$(') || v.startsWith('`') || /^\$\{?[A-Za-z_]\w*(?::?[-?=+][^}]*)?\}?$/.test(v) || /^\*+$/.test(v)) return true;
  if (command) return false;
  return (
    /^\d{1,7}(?:\.\d+)?$/.test(v) ||
    /^#[0-9a-fA-F]{3,8}$/.test(v) ||
    /^(?:true|false|yes|no|on|off|null|nil|none|undefined|required|optional|bearer|basic)$/i.test(v) ||
    /^<[^<>]*>$|^\$?\{\{.*\}\}$|^%[A-Za-z_]\w*%$|^\[(?:REDACTED|MASKED|HIDDEN)[^\]]*\]$/i.test(v) ||
    /^(?:\/|\.{1,2}\/|~\/)[\w./-]*$/.test(v) ||
    /^(?:process\.env|os\.environ|os\.getenv|ENV\[|env\(|getenv\()/.test(v)
  );
}
