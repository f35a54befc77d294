import { type Finding, readTracked, trackedFiles } from './git.ts';

/**
 * Check 2: no typical secrets in tracked files. Each rule is a well-known,
 * specific shape (vendor prefixes, PEM headers, URLs carrying a password), so
 * the check stays quiet on ordinary code and hashes (bun.lock integrity values
 * are base64 and never match these prefixes).
 */
export interface SecretRule {
  name: string;
  pattern: RegExp;
  /** Return false to ignore a match (e.g. a documented placeholder). */
  accept?: (match: RegExpExecArray) => boolean;
}

// A password that is plainly a placeholder in docs, not a credential.
const PLACEHOLDER = /^(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|x+|X+|\.\.\.|password|PASSWORD)$/;

export const SECRET_RULES: readonly SecretRule[] = [
  { name: 'PEM private key', pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----/g },
  { name: 'AWS access key id', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { name: 'GitHub token', pattern: /\bgh[pousr]_[A-Za-z0-9]{36,}\b/g },
  { name: 'GitHub fine-grained token', pattern: /\bgithub_pat_[A-Za-z0-9_]{22,}/g },
  { name: 'Slack token', pattern: /\bxox[baprs]-[A-Za-z0-9-]{10,}/g },
  { name: 'Stripe live key', pattern: /\b[sr]k_live_[A-Za-z0-9]{16,}/g },
  { name: 'npm token', pattern: /\bnpm_[A-Za-z0-9]{36}\b/g },
  { name: 'Google API key', pattern: /\bAIza[0-9A-Za-z_-]{35}/g },
  { name: 'Anthropic/OpenAI API key', pattern: /\bsk-(?:ant|proj)-[A-Za-z0-9_-]{20,}/g },
  {
    name: 'connection URL with a password',
    pattern:
      /\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?):\/\/([^\s:/@'"`]+):([^\s@/'"`]+)@/g,
    accept: (m) => !PLACEHOLDER.test(m[2] ?? ''),
  },
];

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** Findings for one text (exported for unit use); `path` is only for the report. */
export function scanText(path: string, text: string): Finding[] {
  const findings: Finding[] = [];
  for (const rule of SECRET_RULES) {
    const re = new RegExp(rule.pattern.source, rule.pattern.flags);
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      if (rule.accept && !rule.accept(m)) continue;
      findings.push({
        check: 'secrets',
        path,
        line: lineOf(text, m.index),
        // Never echo the secret itself: name the rule and the place.
        message: `looks like a ${rule.name}`,
      });
    }
  }
  return findings;
}

export function checkSecrets(repoDir: string): Finding[] {
  const findings: Finding[] = [];
  for (const path of trackedFiles(repoDir)) {
    const bytes = readTracked(repoDir, path);
    if (bytes === null) continue;
    // latin1 keeps every byte, so a secret inside a binary file is seen too.
    findings.push(...scanText(path, bytes.toString('latin1')));
  }
  return findings;
}
