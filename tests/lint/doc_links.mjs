// Checks the relative links of README.md and docs/*.md: each must name a file
// or directory that exists, and when it names a heading (#anchor, in this
// file or another .md), a heading whose GitHub anchor is that. External links
// (http:, https:, mailto:) are not followed. Prints every broken link with
// its file and line and exits 1 if there is any.
//
//   node tests/lint/doc_links.mjs [REPO_ROOT]    (default: two levels up)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(process.argv[2] ??
  path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..'));

// The markdown files checked: README.md and every docs/*.md.
function documents() {
  const docs = fs.readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join('docs', name));
  return ['README.md', ...docs.sort()];
}

// Lines outside fenced code blocks, with inline code spans blanked out, so
// that a link-like text inside code is not taken for a link.
function proseLines(text) {
  const out = [];
  let fence = null;
  text.split('\n').forEach((line, index) => {
    const opener = line.match(/^\s*(```|~~~)/);
    if (opener) {
      if (fence === null) fence = opener[1];
      else if (opener[1] === fence) fence = null;
      return;
    }
    if (fence === null) out.push({ number: index + 1, text: line.replace(/`[^`]*`/g, '``') });
  });
  return out;
}

// GitHub's anchor for a heading: lower case, punctuation dropped (letters,
// digits, spaces, hyphens and underscores kept), spaces made hyphens; a
// repeated anchor gets -1, -2, ...
function anchors(text) {
  const seen = new Map();
  const result = new Set();
  let fence = null;
  for (const line of text.split('\n')) {
    const opener = line.match(/^\s*(```|~~~)/);
    if (opener) {
      if (fence === null) fence = opener[1];
      else if (opener[1] === fence) fence = null;
      continue;
    }
    const heading = fence === null && line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
    if (!heading) continue;
    const title = heading[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')  // a link keeps its text
      .replace(/`/g, '');
    const base = title.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

const anchorCache = new Map();
function anchorsOf(file) {
  if (!anchorCache.has(file)) anchorCache.set(file, anchors(fs.readFileSync(file, 'utf8')));
  return anchorCache.get(file);
}

const broken = [];
let checked = 0;
for (const doc of documents()) {
  const file = path.join(root, doc);
  for (const line of proseLines(fs.readFileSync(file, 'utf8'))) {
    for (const match of line.text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1];
      if (/^(https?:|mailto:)/.test(target)) continue;
      checked += 1;
      const [ref, anchor] = target.split('#', 2);
      const resolved = ref === '' ? file : path.resolve(path.dirname(file), ref);
      const where = `${doc}:${line.number}: ${target}`;
      if (!resolved.startsWith(root + path.sep) && resolved !== root) {
        broken.push(`${where}: points outside the repository`);
      } else if (!fs.existsSync(resolved)) {
        broken.push(`${where}: no such file`);
      } else if (anchor !== undefined && resolved.endsWith('.md') &&
                 !anchorsOf(resolved).has(decodeURIComponent(anchor))) {
        broken.push(`${where}: no heading with that anchor in ${path.relative(root, resolved)}`);
      }
    }
  }
}

if (broken.length > 0) {
  console.error(`lint.doc_links: ${broken.length} broken link(s):`);
  for (const line of broken) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`lint.doc_links: ${checked} relative links in ${documents().length} files resolve`);
