// Checks the thread-safety annotations (ABSL_GUARDED_BY and friends) with
// clang's -Wthread-safety, which g++ ignores: every project source in the
// build's compile_commands.json is compiled -fsyntax-only with its own
// include paths and defines. Fails on any thread-safety warning.
//
//   node tests/lint/thread_safety.mjs [build-dir]   (default: build)
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const build = path.resolve(ROOT, process.argv[2] ?? process.env.TERMBRIDGE_BUILD_DIR ?? 'build');
const commands = JSON.parse(fs.readFileSync(path.join(build, 'compile_commands.json'), 'utf8'));

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

const sources = commands.filter((c) => c.file.startsWith(ROOT) && !c.file.startsWith(build) &&
  !/_test\.cc$|\/tests\//.test(c.file));
const run = (c) => new Promise((resolve) => {
  execFile('clang++', ['-fsyntax-only', '-Wthread-safety', '-Wno-unknown-warning-option',
    ...flagsOf(c.command), c.file], { cwd: c.directory, maxBuffer: 64 << 20 },
  (error, stdout, stderr) => resolve({ file: c.file, error, out: stderr }));
});

let failed = 0;
const queue = [...sources];
const workers = Array.from({ length: Math.max(1, os.availableParallelism?.() ?? 2) }, async () => {
  for (let c = queue.shift(); c; c = queue.shift()) {
    const { file, error, out } = await run(c);
    const warnings = out.split('\n').filter((l) => /-Wthread-safety/.test(l));
    if (error && !warnings.length) {
      failed++;
      console.log(`${path.relative(ROOT, file)}: clang could not parse it:\n${out.slice(0, 4000)}`);
    } else if (warnings.length) {
      failed++;
      console.log(warnings.join('\n'));
    }
  }
});
await Promise.all(workers);
console.log(`thread-safety: ${sources.length} files, ${failed} with findings`);
process.exit(failed ? 1 : 0);
