// The policy's shell parser against a real one (docs/security.md): a seeded
// generator writes a few thousand command lines (pipelines, lists,
// subshells, groups, substitutions, quoting, escapes, here-documents,
// redirections, assignments, comments, continuations, compound commands,
// functions, arithmetic, process substitution, odd whitespace, CRLF,
// unicode); Debian's shfmt prints each line's syntax tree, and
// tb_parse_dump (common/policy/parse_dump.cc) what our parser finds. Where
// the two disagree about which simple commands a line runs, the line must
// not be allowed by a policy that allows every program our parser found:
// the policy errs to ask. Prints the agreement rate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import readline from 'node:readline';

const PARSE_DUMP = process.env.TERMBRIDGE_PARSE_DUMP_BIN;
const SHFMT = spawnSync('sh', ['-c', 'command -v shfmt']).stdout?.toString().trim();
const LINES = Number(process.env.TB_DIFFERENTIAL_LINES ?? 3000);
const SEED = Number(process.env.TB_DIFFERENTIAL_SEED ?? 20240622);

// mulberry32: a small seeded PRNG, so every run sees the same corpus.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The corpus: lines built from the shell's grammar, nested a few levels.
function generator(seed) {
  const rnd = prng(seed);
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const chance = (p) => rnd() < p;
  const NAMES = ['ls', 'cat', 'echo', 'grep', 'rm', 'touch', 'printf', 'true', 'wc', 'sort',
    'head', 'tr', 'date', 'id', 'sed', 'awk', 'env', 'sudo', 'xargs', 'find', 'sh', 'bash',
    'time', 'nice', 'command', 'exec', 'eval', 'export', 'cd', 'test', '[', 'read', 'curl',
    '/bin/ls', './run.sh', 'g\\rep', "'ls'", '"cat"', 'l"s"', '$CMD', '$(echo ls)', '`echo id`',
    'caf\u00e9', 'x=1', 'wc\u00a0'];
  const WORDS = ['a', 'file.txt', '-l', '--all', '*.c', '?', '[ab]', '{a,b}', '{1..3}', '~',
    '~/x', '"a b"', "'c d'", '"$HOME/x"', '\\;', '\\|', 'a\\ b', '$x', '${x:-d}', '${#x}',
    '"$@"', '$?', '$$', '$((1+2))', "$'a\\tb'", '$"t"', '\u00fcnic\u00f8de', '\u{1F600}',
    '"it\'s"', "'a\"b'", '\\$(rm)', '"\\$(rm)"', '\\#notcomment', 'a#b', 'x=y', '-', '--',
    '%s\\n', '"a\\"b"', '""', "''", '!', 'a!b', '@', ':', '=', 'a=b=c', '\\\\'];
  const word = (d) => {
    if (d < 3 && chance(0.12)) return `$(${list(d + 1)})`;
    if (d < 3 && chance(0.05)) return `\`${simple(d + 1)}\``;
    if (d < 3 && chance(0.05)) return `"$(${list(d + 1)})"`;
    if (d < 3 && chance(0.04)) return `<(${list(d + 1)})`;
    if (d < 3 && chance(0.02)) return `>(${list(d + 1)})`;
    if (chance(0.05)) return `'${list(3)}'`;
    return pick(WORDS);
  };
  const redir = (d) => pick([
    () => `> out${Math.floor(rnd() * 3)}`, () => '>> log', () => '2>&1', () => '< in',
    () => '2>/dev/null', () => `<<< ${word(d)}`, () => '&> all', () => '>| f', () => '3<> rw',
    () => '<&0', () => '>&2', () => `> ${word(d)}`, () => '{fd}>x',
  ])();
  const blank = () => pick([' ', ' ', ' ', '  ', '\t', ' \\\n ', ' \t ']);
  function simple(d) {
    const parts = [];
    while (chance(0.15)) parts.push(pick(['A=1', 'B="x y"', 'C=$(id)', 'PATH=/tmp', 'D=']));
    parts.push(pick(NAMES));
    const n = Math.floor(rnd() * 4);
    for (let i = 0; i < n; ++i) parts.push(chance(0.12) ? redir(d) : word(d));
    let s = parts.join(blank());
    // A comment ends at the newline; shfmt (3.6) wrongly continues one
    // that ends in a backslash, so a newline follows each one here.
    if (chance(0.05)) s += ` # ${pick(['comment', 'rm -rf /', '$(id)', 'x \\'])}\n`;
    return s;
  }
  function command(d) {
    if (d >= 3) return simple(d);
    const r = rnd();
    if (r < 0.62) return simple(d);
    if (r < 0.68) return `( ${list(d + 1)} )`;
    if (r < 0.73) return `{ ${list(d + 1)}; }`;
    if (r < 0.76) return `if ${list(d + 1)}; then ${list(d + 1)}; ${chance(0.5) ? `else ${list(d + 1)}; ` : ''}fi`;
    if (r < 0.79) return `for i in ${word(d)} ${word(d)}; do ${list(d + 1)}; done`;
    if (r < 0.81) return `while ${simple(d + 1)}; do ${list(d + 1)}; done`;
    if (r < 0.83) return `case ${word(d)} in a) ${list(d + 1)};; *) ${simple(d + 1)};; esac`;
    if (r < 0.85) return `f() { ${list(d + 1)}; }${chance(0.5) ? '; f' : ''}`;
    if (r < 0.87) return `(( ${pick(['1+2', 'x++', 'a[$(id)]', 'y=3'])} ))`;
    if (r < 0.89) return `[[ ${pick(['-f x', '$a == b', 'a < b', '-n "$(id)"'])} ]]`;
    if (r < 0.93) return `${simple(d)} <<${pick(['EOF', "'EOF'", '-EOF', '"EOF"'])}\n${pick(['text', '$(id)', 'a\tb', 'EOFX'])}\nEOF`;
    if (r < 0.95) return `function g { ${list(d + 1)}; }`;
    if (r < 0.97) return `coproc ${simple(d + 1)}`;
    return `select x in a b; do ${simple(d + 1)}; done`;
  }
  function pipeline(d) {
    let s = (chance(0.06) ? '! ' : '') + command(d);
    while (chance(0.25)) s += `${pick([' | ', '|', ' |& ', ' |\n '])}${command(d)}`;
    return s;
  }
  function list(d) {
    let s = pipeline(d);
    while (chance(0.3)) s += `${pick([' && ', ' || ', '; ', ' & ', '\n', ';', ' &&\n'])}${pipeline(d)}`;
    return s;
  }
  return () => {
    let line = list(0);
    if (chance(0.05)) line += pick([' &', ';', '\n', ' ;;']);
    if (chance(0.05)) line = line.replaceAll('\n', '\r\n');
    if (chance(0.03)) line = `${pick(['\u00a0', '\t', '  '])}${line}`;
    return line;
  };
}

// What a shell receives through a PTY (icrnl): CR and CRLF are newlines.
const asTyped = (line) => line.replace(/\r\n?/g, '\n');

// The literal value of a shfmt Word, or '<dyn>' when it expands at run time.
function wordValue(word) {
  let out = '';
  for (const part of word.Parts ?? []) {
    if (part.Type === 'Lit') out += part.Value.replace(/\\(.)/gs, '$1');
    else if (part.Type === 'SglQuoted' && part.Dollar) {
      // $'...': the C escapes the generator writes.
      const c = { t: '\t', n: '\n', r: '\r', a: '\x07', b: '\b', e: '\x1b', f: '\f', v: '\v' };
      out += part.Value.replace(/\\(.)/gs, (_, ch) => c[ch] ?? ch);
    } else if (part.Type === 'SglQuoted') out += part.Value;
    else if (part.Type === 'DblQuoted') {
      for (const p of part.Parts ?? []) {
        if (p.Type !== 'Lit') return '<dyn>';
        out += p.Value.replace(/\\([$`"\\])/g, '$1');
      }
    } else return '<dyn>';
  }
  return out;
}

const basename = (s) => (s === '/' ? s : s.replace(/\/+$/, '').replace(/^.*\//, ''));

// The names of every simple command in shfmt's tree (calls and
// declarations such as export), as a Set. An eval of literal words runs
// their code, whose commands shfmt is asked for in turn.
async function shfmtNames(tree) {
  const names = new Set();
  const evals = [];
  const walk = (node) => {
    if (Array.isArray(node)) { node.forEach(walk); return; }
    if (!node || typeof node !== 'object') return;
    if (node.Type === 'CallExpr' && node.Args?.length) {
      const name = basename(wordValue(node.Args[0]));
      const code = node.Args.slice(1).map(wordValue);
      names.add(name);
      if (name === 'eval' && !code.includes('<dyn>')) evals.push(code.join(' '));
    }
    if (node.Type === 'DeclClause' && node.Variant?.Value) names.add(node.Variant.Value);
    if (node.Type === 'TimeClause') names.add('time');  // a keyword in bash, a program too
    for (const v of Object.values(node)) if (v && typeof v === 'object') walk(v);
  };
  walk(tree);
  for (const code of evals) {
    const inner = await shfmt(code);
    if (!inner) names.add('eval');
    else for (const n of await shfmtNames(inner)) names.add(n);
  }
  return names;
}

// Our parser's view: every program found (`all`, wrappers included) and
// the ones the shell itself runs (`top`: not found inside a wrapper).
function ourNames(dump) {
  const all = new Set();
  const top = new Set();
  for (const c of dump.commands) {
    if (!c.argv.length || c.note.includes('assumes ')) continue;
    const name = c.dynamic && /[$`]/.test(c.argv[0]) ? '<dyn>' : c.program;
    all.add(name);
    if (c.via.length === 0) top.add(name);
    for (const v of c.via) all.add(basename(v.split(' ')[0]));
  }
  return { all, top };
}

async function shfmt(line) {
  return new Promise((resolve) => {
    const child = spawn(SHFMT, ['--ln', 'bash', '--to-json'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.on('close', (code) => {
      if (code !== 0) resolve(null);
      else {
        try { resolve(JSON.parse(out)); } catch { resolve(null); }
      }
    });
    child.stdin.end(line);
  });
}

// Whether bash itself parses `line` (bash -n: syntax only, nothing runs).
function bashAccepts(line) {
  return spawnSync('bash', ['-n'], { input: line }).status === 0;
}

async function ourDumps(lines) {
  const child = spawn(PARSE_DUMP, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  const dumps = [];
  const rl = readline.createInterface({ input: child.stdout });
  rl.on('line', (l) => dumps.push(JSON.parse(l)));
  const closed = new Promise((resolve) => child.on('close', resolve));
  for (const line of lines) child.stdin.write(`${JSON.stringify(line)}\n`);
  child.stdin.end();
  assert.equal(await closed, 0, 'tb_parse_dump failed');
  return dumps;
}

test('where our parser and shfmt disagree on what runs, the policy asks', {
  skip: !SHFMT ? 'shfmt is not installed (deploy/setup.sh installs it)'
    : !PARSE_DUMP ? 'TERMBRIDGE_PARSE_DUMP_BIN is not set' : false,
}, async () => {
  const next = generator(SEED);
  const lines = Array.from({ length: LINES }, next);
  const started = performance.now();
  const dumps = await ourDumps(lines);
  assert.equal(dumps.length, lines.length);
  const trees = new Array(lines.length);
  let index = 0;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (index < lines.length) {
      const i = index++;
      trees[i] = await shfmt(asTyped(lines[i]));
    }
  }));
  let agree = 0;
  const counts = { bothParse: 0, onlyShfmt: 0, onlyOurs: 0, neither: 0, shfmtOnlyRefuses: 0 };
  const allowedDisagreements = [];
  for (let i = 0; i < lines.length; ++i) {
    const tree = trees[i];
    const dump = dumps[i];
    const oursOk = dump.error === null;
    let same;
    if (tree && oursOk) {
      counts.bothParse++;
      const theirs = await shfmtNames(tree);
      const ours = ourNames(dump);
      // eval runs nothing of its own (its code's commands are compared),
      // and a brace in a command word is expanded by our parser only.
      same = [...theirs].every((n) => n === 'eval' || n.includes('{') || ours.all.has(n))
        && [...ours.top].every((n) => theirs.has(n) || [...theirs].some((t) => t.includes('{')));
    } else if (!tree && !oursOk) {
      counts.neither++;
      same = true;
    } else if (!tree && bashAccepts(asTyped(lines[i]))) {
      // shfmt refuses what bash takes (export <&0 x): the real shell is
      // bash, so only shfmt's tree is missing; not counted as agreement.
      counts.shfmtOnlyRefuses++;
      same = false;
      continue;
    } else {
      counts[tree ? 'onlyShfmt' : 'onlyOurs']++;
      same = false;
    }
    if (same) agree++;
    else if (dump.decision.action === 'allow') {
      allowedDisagreements.push({
        line: lines[i],
        shfmt: tree ? [...await shfmtNames(tree)] : 'parse error',
        ours: dump.commands.map((c) => c.argv),
        decision: dump.decision.reason,
      });
    }
  }
  const rate = (100 * agree) / lines.length;
  console.log(`# parser differential: ${agree}/${lines.length} lines agree (${rate.toFixed(1)}%); `
    + `both parse ${counts.bothParse}, only shfmt parses ${counts.onlyShfmt}, only ours `
    + `${counts.onlyOurs}, neither ${counts.neither}, bash but not shfmt ${counts.shfmtOnlyRefuses}; `
    + `${((performance.now() - started) / 1000).toFixed(1)} s`);
  if (process.env.TB_DIFFERENTIAL_DUMP) {
    (await import('node:fs')).writeFileSync(process.env.TB_DIFFERENTIAL_DUMP,
      JSON.stringify(allowedDisagreements, null, 1));
  }
  assert.deepEqual(allowedDisagreements.slice(0, 10), [],
    `${allowedDisagreements.length} lines the parsers disagree on would be allowed`);
});
