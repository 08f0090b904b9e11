/**
 * Token rules: credentials known by their own shape wherever they stand (vendor prefixes,
 * JWTs, cloud formats), `Authorization` with any scheme, and URL credentials (a password, or
 * a token given as the user). Header lines named for a credential are line rules
 * (`printers.ts`).
 *
 * The vendor prefixes are hand-kept, as the vendors document their token formats; they are
 * not yet extracted from a maintained scanner's rule set (issue 27 asks for that). Each rule
 * is one pass over the text: a rule whose pattern starts with a character class has a
 * `needle`, so text without it costs one fast search.
 */

import { notASecret } from './names.js';

export interface Rule {
  name: string;
  pattern: RegExp;
  /** Which capture group is the secret (0 = the whole match). */
  group: number;
  /**
   * The rule matches a URL scheme's `://`: the pattern is tried (sticky) only at the scheme
   * before each `://`, not at every position of the text.
   */
  atSchemes?: true;
  /** A match whose secret this says is none (a placeholder, a status word) is kept. */
  skip?: (secret: string) => boolean;
  /**
   * Text without this is not matched at all: a rule whose pattern starts with a character
   * class costs a try at every position, the needle one fast search.
   */
  needle?: string | RegExp;
}

/**
 * Vendor tokens with a distinctive prefix that the core's rule set (gitleaks) does not find
 * in the shapes tools print them: the prefix, then the token's own characters.
 */
const VENDOR = [
  'pypi-AgE[A-Za-z0-9_-]{50,}',
  'ATBB[A-Za-z0-9]{32}',
  'NR(?:AK|JS|II)-[A-Z0-9]{19,32}',
  'ntn_[A-Za-z0-9]{40,}',
  'secret_[A-Za-z0-9]{43}\\b',
  'r8_[A-Za-z0-9]{37}',
  'xai-[A-Za-z0-9]{60,}',
  'tvly-(?:dev-)?[A-Za-z0-9]{32}',
  'lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}',
  'CFPAT-[A-Za-z0-9_-]{43}',
  'nfp_[A-Za-z0-9]{36}',
  'dp\\.(?:pt|st|sa|ct|scim|audit)\\.[A-Za-z0-9]{40,44}',
  'key-[a-f0-9]{32}\\b',
  'sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}',
  'lin_(?:api|oauth)_[A-Za-z0-9]{40,}',
  'fig[dhu]_[A-Za-z0-9_-]{40,}',
  'FLWSECK(?:_TEST)?-[a-f0-9]{32}-X',
  'tfp_[A-Za-z0-9_=.-]{44,59}',
  'HRKU-[A-Za-z0-9_-]{58,}',
];

export const RULES: Rule[] = [
  // `Authorization` (and `Proxy-`) with any scheme, or with no scheme: the credential after
  // the scheme, with the `, name=value` parameters that follow it (an AWS SigV4 value is a
  // credential, signed headers and a signature).
  {
    name: 'authorization',
    pattern: /(?<![\w-])(?:Proxy-)?Authorization["']?[ \t]*[:=][ \t]*["']?((?:[A-Za-z][\w.-]{0,40}[ \t]+)?)((?=[^\s"']{8})[^\s"',]+(?:,[ \t]*[\w-]+=[^\s"',]+)*)/gi,
    group: 2,
    skip: (v) => notASecret(v) || /^[A-Za-z][\w.-]*[ \t]+(?:\$|<|\*\*\*|\{\{|…)/.test(v) || /^[a-z]+[.!]?$/.test(v),
    needle: /authorization/i,
  },
  { name: 'bearer', pattern: /\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)/g, group: 1 },
  { name: 'api-key-header', pattern: /\b(?:X-Api-Key|Api-Key|X-Auth-Token|X-Access-Token|Private-Token)["']?\s*[:=]\s*["']?([A-Za-z0-9._~+/=-]{12,})/gi, group: 1 },
  // scheme://user:password@host: the password runs to the last `@` before the host (see the
  // module docs of redact.ts). Lengths are bounded so a line of `a://b:` repeats stays linear.
  {
    name: 'url-credentials',
    pattern: /\b[a-z][a-z0-9+.-]{0,30}:\/\/[^\s:/?#]{0,256}:(?!\d+(?:[/?#\s]|$))(\S{1,256}?)@(?=[\w[.-]+(?:[:/?#\s'")\]]|$))(?![^\s@/]{0,256}@)/gim,
    group: 1,
    atSchemes: true,
  },
  // scheme://TOKEN@host: a user of 20 or more token characters with a digit (`git remote -v`
  // after a clone with a token); `git@`, `x-access-token@` and names stay.
  {
    name: 'url-user-token',
    pattern: /\b[a-z][a-z0-9+.-]{0,30}:\/\/((?=[A-Za-z_-]{0,255}\d)[A-Za-z0-9_-]{20,256})@(?=[\w[.-])/gim,
    group: 1,
    atSchemes: true,
  },
  // ?password=…&token=… in URLs and form bodies; `sig=` of Azure SAS and signed URLs.
  {
    name: 'query-credentials',
    pattern: /[?&;](?:password|passwd|pwd|pass|secret|token|access_token|id_token|refresh_token|api_key|apikey|client_secret|auth|sig|signature|X-Amz-Signature|X-Amz-Security-Token|X-Goog-Signature|X-Goog-Credential)=([^&\s#'";]+)/gi,
    group: 1,
  },
  { name: 'jwt', pattern: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, group: 0 },
  { name: 'anthropic', pattern: /sk-ant-[a-z0-9]{2,8}-[A-Za-z0-9_-]{20,}/g, group: 0 },
  // A project, service-account or admin key is distinctive enough to match glued to what precedes it (`build42sk-proj-…`); a bare `sk-` keeps its word boundary.
  { name: 'openai', pattern: /(?:sk-(?:proj|svcacct|admin)-|\bsk-)[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'github', pattern: /(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/g, group: 0 },
  { name: 'gitlab', pattern: /gl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'slack', pattern: /xox[abposre]-[A-Za-z0-9-]{10,}/g, group: 0 },
  { name: 'slack-webhook', pattern: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/]+/g, group: 0 },
  { name: 'aws-access-key', pattern: /(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b/g, group: 0 },
  { name: 'google-api-key', pattern: /AIza[0-9A-Za-z_-]{35}/g, group: 0 },
  { name: 'npm', pattern: /npm_[A-Za-z0-9]{36}\b/g, group: 0 },
  { name: 'huggingface', pattern: /hf_[A-Za-z0-9]{30,}/g, group: 0 },
  { name: 'google-oauth', pattern: /\bya29\.[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'groq', pattern: /gsk_[A-Za-z0-9]{40,}/g, group: 0 },
  { name: 'sendgrid', pattern: /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g, group: 0 },
  { name: 'vendor-prefixed', pattern: /(?:lin_api_|shp(?:at|ca|pa|ss)_|dckr_pat_|whsec_|npm_config__authToken=|\b(?:gl(?:c|sa)_|hv[sbr]\.|figd_|xapp-))[A-Za-z0-9_.=-]{16,}/g, group: 0 },
  { name: 'vendor', pattern: new RegExp(VENDOR.join('|'), 'g'), group: 0 },
  // Telegram and Discord bot tokens, whose distinctive part is inside them.
  { name: 'telegram', pattern: /(?<!\d)\d{8,10}:AA[A-Za-z0-9_-]{33}/g, group: 0, needle: ':AA' },
  { name: 'discord', pattern: /\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}\b/g, group: 0, needle: /\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}/ },
  { name: 'npmrc-token', pattern: /_authToken\s*=\s*([^\s"']{8,})/g, group: 1 },
  { name: 'aws-secret', pattern: /\baws_secret_access_key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})/gi, group: 1 },
  // Secret and restricted keys; publishable keys (pk_) are public by design.
  { name: 'stripe', pattern: /(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, group: 0 },
];
