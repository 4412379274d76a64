// Every link of the pages npm shows or ships (README.md, CHANGELOG.md) must work from the npm page
// and from node_modules, away from the repository, so
//   - a link into the repository (package.json's repository, /blob/main/ or /tree/main/) must name
//     a file or folder git tracks, and its #anchor a heading of that Markdown file;
//   - a relative link must name a file that is both in the packed tarball (`npm pack --dry-run`)
//     and tracked (npm rewrites it against the repository, node_modules has the tarball's);
//   - a #anchor alone must be a heading of the page itself.
// Other URLs are listed, not fetched (CI may be offline). Run by `npm run lint`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const pages = process.argv.length > 2 ? process.argv.slice(2) : ['README.md', 'CHANGELOG.md'];
const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
const repository = /github\.com\/([^/]+\/[^/.]+)/.exec(manifest.repository?.url ?? '')?.[1];
if (!repository) throw new Error('check-readme-links: package.json has no GitHub repository.url');
const blob = new RegExp(`^https://github\\.com/${repository}/(?:blob|tree)/main/([^#?]*)(?:#(.*))?$`);

const run = (command, args) => execFileSync(command, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
const tracked = run('git', ['ls-files']).split('\n').filter(Boolean);
const isTracked = (path) => tracked.includes(path) || tracked.some((file) => file.startsWith(`${path.replace(/\/$/, '')}/`));
const [packed] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts']));
const inTarball = new Set(packed.files.map((file) => file.path));

/** The page's text with fenced code blocks and code spans blanked (their brackets are no links). */
const prose = (text) => text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``');

/** GitHub's anchors for a Markdown page's headings (lowercase, punctuation dropped, spaces to -, repeats -1, -2). */
function anchors(path) {
  const seen = new Map();
  const out = new Set();
  for (const [, heading] of readFileSync(`${root}${path}`, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    out.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return out;
}

const problems = [];
let checked = 0;
const unchecked = new Set();
for (const page of pages) {
  const text = prose(readFileSync(`${root}${page}`, 'utf8'));
  const targets = [
    ...[...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]),
    ...[...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((match) => match[1]),
  ];
  const defined = new Set([...text.matchAll(/^ {0,3}\[([^\]]+)\]:/gm)].map((match) => match[1].toLowerCase()));
  for (const [, label, ref] of text.matchAll(/\[([^\]]*)\]\[([^\]]*)\]/g)) {
    if (!defined.has((ref || label).toLowerCase())) problems.push(`${page}: [${label}][${ref}]: no definition of [${ref || label}]`);
  }
  const anchorIn = (path, anchor, link) => {
    if (anchor && path.endsWith('.md') && !anchors(path).has(decodeURIComponent(anchor))) problems.push(`${page}: ${link}: ${path} has no heading #${anchor}`);
  };
  for (const link of targets) {
    checked += 1;
    const inRepo = blob.exec(link);
    if (inRepo) {
      const [, path, anchor] = inRepo;
      if (!isTracked(decodeURIComponent(path))) problems.push(`${page}: ${link}: ${path} is not tracked in the repository`);
      else anchorIn(decodeURIComponent(path), anchor, link);
    } else if (link.startsWith('#')) {
      anchorIn(page, link.slice(1), link);
    } else if (/^[a-z][a-z0-9+.-]*:/i.test(link)) {
      if (link.startsWith(`https://github.com/${repository}/blob/`) || link.startsWith(`https://github.com/${repository}/tree/`)) {
        problems.push(`${page}: ${link}: link to the main branch (/blob/main/ or /tree/main/)`);
      } else unchecked.add(link);
    } else {
      const [path, anchor] = decodeURIComponent(link).split('#');
      if (!inTarball.has(path)) problems.push(`${page}: ${link}: relative, but ${path} is not in the packed tarball (link to the repository instead)`);
      else if (!isTracked(path)) problems.push(`${page}: ${link}: ${path} is not tracked in the repository`);
      else anchorIn(path, anchor, link);
    }
  }
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`check-readme-links: ${problem}`);
  process.exit(1);
}
console.log(
  `check-readme-links: ${checked} links of ${pages.join(', ')} resolve (${repository}, the tarball); not fetched: ${[...unchecked].join(', ') || 'none'}`,
);
