/**
 * Token rules that need context the core's token engine does not read: `Authorization` with
 * any scheme, `Bearer` and API-key headers, URL credentials (a password, or a token given as
 * the user), query and form credentials, `_authToken =` and `aws_secret_access_key =`.
 * Tokens known by their own shape (vendor prefixes, JWTs, cloud formats) are the core's
 * (`procward_core::redact`: gitleaks' rule set and procward's own rules), and header lines
 * named for a credential are a line rule (`printers.ts`). Each rule here is one pass over
 * the text; a `needle` lets text without it skip the rule after one fast search.
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


export const RULES: Rule[] = [
  // `Authorization` (and `Proxy-`) with any scheme, or with no scheme: the credential after
  // the scheme, with the `, name=value` parameters that follow it (an AWS SigV4 value is a
  // credential, signed headers and a signature).
  {
    name: 'authorization',
    pattern: /(?<![\w-])(?:Proxy-)?Authorization["']?[ \t]*[:=][ \t]*["']?((?:[A-Za-z][\w.-]{0,40}[ \t]+)?)((?=[^\s"']{8}|[\w-]+="[^"\n]{4})(?:[\w-]+="[^"\n]*"|[^\s"',]+)(?:,[ \t]*[\w-]+=(?:"[^"\n]*"|[^\s"',]+))*)/gi,
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
  { name: 'npmrc-token', pattern: /_authToken\s*=\s*([^\s"']{8,})/g, group: 1 },
  { name: 'aws-secret', pattern: /\baws_secret_access_key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})/gi, group: 1 },
];
