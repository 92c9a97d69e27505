// Checks the thread-safety annotations (ABSL_GUARDED_BY and friends) with
// clang's -Wthread-safety and -Wthread-safety-beta, made errors by
// -Werror=thread-safety (g++ ignores the annotations): every project source in
// the build's compile_commands.json is compiled -fsyntax-only with its own
// include paths and defines. Fails on any thread-safety diagnostic.
//
// A file that passed is not compiled again while neither it nor any header it
// includes (clang's -MD list), its flags or clang changed: the record of clean
// files is <build-dir>/thread-safety-clean.json.
//
//   node tests/lint/thread_safety.mjs [build-dir]   (default: build)
import { execFile, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const build = path.resolve(ROOT, process.argv[2] ?? process.env.TERMBRIDGE_BUILD_DIR ?? 'build');
const commands = JSON.parse(fs.readFileSync(path.join(build, 'compile_commands.json'), 'utf8'));
const CHECKS = ['-Wthread-safety', '-Wthread-safety-beta', '-Werror=thread-safety',
  '-Werror=thread-safety-beta', '-Wno-unknown-warning-option'];

// Keeps what decides how a file parses: includes, defines, the standard.
function flagsOf(command) {
  const words = command.match(/(?:[^\s"']+|"[^"]*"|'[^']*')+/g) ?? [];
  const kept = [];
  for (let i = 1; i < words.length; ++i) {
    const w = words[i].replace(/^"(.*)"$/, '$1');
    if (w === '-I' || w === '-isystem' || w === '-D') { kept.push(w, words[++i]); continue; }
    if (/^-(I|D|isystem|std=)/.test(w) || w === '-pthread') kept.push(w);
  }
  return kept;
}

// The files a make-style dependency list (clang -MD) names, absolute.
function depsOf(text, cwd) {
  const body = text.replace(/\\\n/g, ' ').replace(/^[^:]*:/, '');
  const names = body.match(/(?:\\ |[^\s])+/g) ?? [];
  return names.map((n) => path.resolve(cwd, n.replace(/\\ /g, ' ')));
}

const stats = new Map();
// "mtime:size" of a file, or null when it is gone; each file stat'ed once.
function stamp(file) {
  if (!stats.has(file)) {
    try {
      const s = fs.statSync(file);
      stats.set(file, `${s.mtimeMs}:${s.size}`);
    } catch {
      stats.set(file, null);
    }
  }
  return stats.get(file);
}

const recordPath = path.join(build, 'thread-safety-clean.json');
const clang = execFileSync('clang++', ['--version'], { encoding: 'utf8' });
const toolKey = crypto.createHash('sha256').update(clang + CHECKS.join(' ')).digest('hex');
let record = { toolKey, files: {} };
try {
  const old = JSON.parse(fs.readFileSync(recordPath, 'utf8'));
  if (old.toolKey === toolKey) record = old;
} catch {}
const fresh = { toolKey, files: {} };

// True when the file passed before with these flags and nothing it read changed.
function stillClean(file, args) {
  const r = record.files[file];
  return r && r.args === args && r.deps.every(([d, s]) => stamp(d) === s);
}

const sources = commands.filter((c) => c.file.startsWith(ROOT) && !c.file.startsWith(build) &&
  !/_test\.cc$|\/tests\//.test(c.file));
const depDir = fs.mkdtempSync(path.join(os.tmpdir(), 'thread-safety-'));
const run = (c, n) => new Promise((resolve) => {
  const depFile = path.join(depDir, `${n}.d`);
  execFile('clang++', ['-fsyntax-only', ...CHECKS, '-MD', '-MF', depFile, ...flagsOf(c.command),
    c.file], { cwd: c.directory, maxBuffer: 64 << 20 },
  (error, stdout, stderr) => {
    let deps = [];
    try { deps = depsOf(fs.readFileSync(depFile, 'utf8'), c.directory); } catch {}
    resolve({ file: c.file, error, out: stderr, deps });
  });
});

let failed = 0;
let skipped = 0;
let n = 0;
const queue = [...sources];
const workers = Array.from({ length: Math.max(1, os.availableParallelism?.() ?? 2) }, async () => {
  for (let c = queue.shift(); c; c = queue.shift()) {
    const args = flagsOf(c.command).join(' ');
    if (stillClean(c.file, args)) {
      fresh.files[c.file] = record.files[c.file];
      skipped++;
      continue;
    }
    const { file, error, out, deps } = await run(c, n++);
    const findings = out.split('\n').filter((l) => /-W(error,-W)?thread-safety/.test(l));
    if (error && !findings.length) {
      failed++;
      console.log(`${path.relative(ROOT, file)}: clang could not parse it:\n${out.slice(0, 4000)}`);
    } else if (findings.length) {
      failed++;
      console.log(findings.join('\n'));
    } else if (deps.length) {
      fresh.files[file] = { args, deps: deps.map((d) => [d, stamp(d)]) };
    }
  }
});
await Promise.all(workers);
fs.rmSync(depDir, { recursive: true, force: true });
fs.writeFileSync(recordPath, JSON.stringify(fresh));
console.log(`thread-safety: ${sources.length} files (${sources.length - skipped} compiled, ` +
  `${skipped} unchanged since they passed), ${failed} with findings`);
process.exit(failed ? 1 : 0);
