/**
 * Redaction: the one function every command written to disk and every output leaving
 * through a surface passes through. It masks vendor tokens, Authorization headers,
 * credentials in URLs, JWTs and private key blocks.
 */

/** Masks a secret, keeping a short prefix and suffix of long tokens so they stay recognisable. */
export function mask(secret: string): string {
  return secret.length >= 24 ? `${secret.slice(0, 6)}…${secret.slice(-4)}` : '***';
}

interface Rule {
  name: string;
  pattern: RegExp;
  /** Which capture group is the secret (0 = the whole match). */
  group: number;
}

const RULES: Rule[] = [
  { name: 'private-key', pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, group: 0 },
  { name: 'authorization', pattern: /\b(?:Authorization|Proxy-Authorization)\s*[:=]\s*["']?(?:Bearer|Basic|Token|Bot)\s+([A-Za-z0-9._~+/=-]{8,})/gi, group: 1 },
  { name: 'bearer', pattern: /\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)/g, group: 1 },
  { name: 'api-key-header', pattern: /\b(?:X-Api-Key|Api-Key|X-Auth-Token)\s*[:=]\s*["']?([A-Za-z0-9._~+/=-]{12,})/gi, group: 1 },
  { name: 'url-credentials', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s@/]+)@/gi, group: 1 },
  { name: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, group: 0 },
  { name: 'openai-anthropic', pattern: /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'github', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/g, group: 0 },
  { name: 'gitlab', pattern: /\bglpat-[A-Za-z0-9_-]{20,}/g, group: 0 },
  { name: 'slack', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, group: 0 },
  { name: 'aws-access-key', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, group: 0 },
  { name: 'google-api-key', pattern: /\bAIza[0-9A-Za-z_-]{35}/g, group: 0 },
  { name: 'npm', pattern: /\bnpm_[A-Za-z0-9]{36}\b/g, group: 0 },
  { name: 'huggingface', pattern: /\bhf_[A-Za-z0-9]{30,}/g, group: 0 },
  { name: 'stripe', pattern: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, group: 0 },
];

/** Returns `text` with every secret the rules recognise masked. */
export function redact(text: string): string {
  let out = text;
  for (const rule of RULES) {
    out = out.replace(rule.pattern, (match: string, ...groups: unknown[]) => {
      if (rule.group === 0) return rule.name === 'private-key' ? '[REDACTED PRIVATE KEY]' : mask(match);
      const secret = groups[rule.group - 1];
      return typeof secret === 'string' ? match.replace(secret, mask(secret)) : match;
    });
  }
  return out;
}
