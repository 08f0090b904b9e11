/**
 * Redaction: the one function every command written to disk and every output or
 * notification leaving through a surface (tool, CLI, MCP) passes through.
 *
 * Masked: vendor tokens (OpenAI/Anthropic, GitHub, GitLab, Slack, AWS, Google, npm,
 * Hugging Face, Stripe), `Authorization`/`X-Api-Key` credentials (the scheme is kept),
 * private key blocks, passwords in URLs, JWTs; and, for env dumps (`env`, `printenv`,
 * `export`, `set`, `declare`, reads of `.env` files), any `NAME=value` whose name looks like
 * a credential. Long tokens keep a short prefix and suffix so they stay recognisable.
 *
 * The patterns are a hand-kept list rather than secretlint's rules: redaction runs
 * synchronously on every preview and page, and secretlint's engine is asynchronous and
 * built for whole files (see the issue notes for the evaluation).
 */

/** Options of {@link redact}. */
export interface RedactOptions {
  /** The text is an environment dump or a `.env` file: also mask credential-like `NAME=value`. */
  envDump?: boolean;
}

/** Masks a secret, keeping a short prefix and suffix of long tokens. */
export function mask(secret: string): string {
  if (secret.length >= 24) return `${secret.slice(0, 6)}…${secret.slice(-4)}`;
  if (secret.length >= 12) return `${secret.slice(0, 3)}…`;
  return '***';
}

interface Rule {
  name: string;
  pattern: RegExp;
  /** Which capture group is the secret (0 = the whole match). */
  group: number;
}

const RULES: Rule[] = [
  {
    // A BEGIN line followed by key material (optionally after PEM header lines, or after a
    // JSON-escaped `\n` as in service-account files); a mention of the BEGIN line in prose or
    // code is not a key.
    name: 'private-key',
    pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?=(?:\s*[A-Za-z-]+:[^\n]*\n)*(?:\s|\\n)*[A-Za-z0-9+/]{16})[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$)/g,
    group: 0,
  },
  {
    name: 'authorization',
    pattern: /\b(?:Proxy-)?Authorization["']?\s*[:=]\s*["']?(?:Bearer|Basic|Token|Bot|Digest|ApiKey)\s+([A-Za-z0-9._~+/=:-]{8,})/gi,
    group: 1,
  },
  { name: 'bearer', pattern: /\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)/g, group: 1 },
  { name: 'api-key-header', pattern: /\b(?:X-Api-Key|Api-Key|X-Auth-Token|X-Access-Token|Private-Token)["']?\s*[:=]\s*["']?([A-Za-z0-9._~+/=-]{12,})/gi, group: 1 },
  { name: 'url-credentials', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:([^\s@/]+)@/gi, group: 1 },
  { name: 'jwt', pattern: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, group: 0 },
  { name: 'anthropic', pattern: /sk-ant-[a-z0-9]{2,8}-[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'openai', pattern: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'github', pattern: /(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/g, group: 0 },
  { name: 'gitlab', pattern: /gl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'slack', pattern: /xox[abposre]-[A-Za-z0-9-]{10,}/g, group: 0 },
  { name: 'slack-webhook', pattern: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/]+/g, group: 0 },
  { name: 'aws-access-key', pattern: /(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b/g, group: 0 },
  { name: 'google-api-key', pattern: /AIza[0-9A-Za-z_-]{35}/g, group: 0 },
  { name: 'npm', pattern: /npm_[A-Za-z0-9]{36}\b/g, group: 0 },
  { name: 'huggingface', pattern: /hf_[A-Za-z0-9]{30,}/g, group: 0 },
  // Distinctive prefixes need no word boundary before them (`\tghp_…` in a command line);
  // short or common ones (`sk-`, headers) keep it.
  // Secret and restricted keys; publishable keys (pk_) are public by design.
  { name: 'google-oauth', pattern: /\bya29\.[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'groq', pattern: /\bgsk_[A-Za-z0-9]{40,}/g, group: 0 },
  { name: 'sendgrid', pattern: /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g, group: 0 },
  { name: 'vendor-prefixed', pattern: /\b(?:lin_api_|shp(?:at|ca|pa|ss)_|gl(?:c|sa)_|hv[sbr]\.|dckr_pat_|figd_|whsec_|xapp-|npm_config__authToken=)[A-Za-z0-9_.=-]{16,}/g, group: 0 },
  { name: 'npmrc-token', pattern: /_authToken\s*=\s*([^\s"']{8,})/g, group: 1 },
  { name: 'aws-secret', pattern: /\baws_secret_access_key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})/gi, group: 1 },
  { name: 'curl-user', pattern: /\bcurl\b[^\n]*?\s(?:-u|--user)\s+["']?[^\s:"']+:([^\s"']+)/g, group: 1 },
  { name: 'stripe', pattern: /(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, group: 0 },
];

/** Names that look like credentials (`*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*_API_KEY`, ...). */
export const CREDENTIAL_NAME =
  /(?:^|_)(?:TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASS|API_?KEY|ACCESS_?KEY|SECRET_?KEY|PRIVATE_?KEY|CLIENT_SECRET|CREDENTIALS?|AUTH_?TOKEN|SESSION_?KEY|SIGNING_?KEY|WEBHOOK_?SECRET|DSN)(?:_|$)|(?:PASSWORD|PASSWD)$/i;

/** A value that cannot be a secret worth masking: empty, a short number, a boolean, a placeholder, a file path. */
function trivialValue(value: string): boolean {
  const v = value.replace(/^["']|["']$/g, '');
  return (
    v === '' ||
    /^\d{1,7}$/.test(v) ||
    /^(true|false|yes|no|on|off|null|none)$/i.test(v) ||
    /^\*+$/.test(v) ||
    /^\$\{?[A-Za-z_]\w*\}?$/.test(v) ||
    /^(?:\/|\.{1,2}\/|~\/)[\w./-]*$/.test(v)
  );
}

const ENV_LINE = /^(\s*(?:export\s+|declare\s+-[a-zA-Z]+\s+|set\s+)?)([A-Za-z_][A-Za-z0-9_]*)=(.*)$/gm;

/** Returns `text` with every secret the rules recognise masked. */
export function redact(text: string, opts: RedactOptions = {}): string {
  let out = text;
  for (const rule of RULES) {
    out = out.replace(rule.pattern, (match: string, ...groups: unknown[]) => {
      if (rule.group === 0) return rule.name === 'private-key' ? '[REDACTED PRIVATE KEY]' : mask(match);
      const secret = groups[rule.group - 1];
      return typeof secret === 'string' ? match.replace(secret, mask(secret)) : match;
    });
  }
  if (opts.envDump) {
    out = out.replace(ENV_LINE, (line, lead: string, name: string, value: string) =>
      CREDENTIAL_NAME.test(name) && !trivialValue(value) && !value.includes('…') ? `${lead}${name}=${mask(value)}` : line,
    );
  }
  return out;
}

const ASSIGNMENT = /(^|[\s;&|(])((?:export\s+|declare\s+-\w+\s+)?)([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|[^\s;&|)]+)/g;

/**
 * Redacts a command line: everything {@link redact} masks, plus the values of
 * credential-like variable assignments (`PGPASSWORD=… psql`, `export API_TOKEN=…`).
 */
export function redactCommand(command: string): string {
  return redact(command).replace(ASSIGNMENT, (match, lead: string, kw: string, name: string, value: string) =>
    CREDENTIAL_NAME.test(name) && !trivialValue(value) && !value.includes('…') ? `${lead}${kw}${name}=${mask(value.replace(/^["']|["']$/g, ''))}` : match,
  );
}

const ENV_DUMP_COMMAND = /(?:^|[;&|(]\s*|\bsudo\s+)(?:env|printenv|export|set|declare(?:\s+-[a-zA-Z]+)?)\s*(?:$|[|;&>)])|\b(?:cat|less|more|head|tail|bat|grep)\b[^|;&]*\.env\b/m;

/** Whether the output of `command` is an environment dump or a `.env` file (see {@link RedactOptions.envDump}). */
export function isEnvDumpCommand(command: string): boolean {
  return ENV_DUMP_COMMAND.test(command);
}
