// Parity between the two ways people run the agent (docs/operating.md):
// one scenario matrix, run against a real host broker twice, once with
// termbridge-agent as a local process and once with it in a real podman
// container built from deploy/Containerfile, reaching the broker through
// host.containers.internal with TLS (deploy/make-credentials.sh) and the
// agent token. Both runs must give the same canonical results once ids,
// timings and cursors are normalized.
//
// The container half skips, saying why, when podman is missing or has no
// base image (deploy/setup.sh installs both). It builds the image once per
// run; podman's layer cache makes a rebuild without source changes cheap
// (seconds), while a first build from nothing takes minutes. The build's
// duration is printed as a test diagnostic. TERMBRIDGE_AGENT_IMAGE=NAME uses
// an image built beforehand instead.
//
// The same matrix runs a third time with the agent under a real Docker
// daemon (`docker run -i`, docker's host.docker.internal:host-gateway alias),
// in a private dockerd (tests/support/dockerd.sh), which skips where docker
// cannot run. Time box: it runs the podman-built image, loaded into docker
// (one image build per run, shared; TERMBRIDGE_DOCKER_BUILD=1 builds it with
// docker instead, tests/support/docker.mjs), so it adds about 2 s for the
// daemon, 5-15 s for the load and the matrix's own 20-40 s.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DOCKER, DOCKER_BUILD, agentImageForDocker, startDockerd } from '../support/docker.mjs';
import {
  AGENT_BIN, BROKER_BIN, Broker, CLI_BIN, expectExit, tempDir, terminal, waitForJsonFile,
  watchApprovals,
} from '../lib/harness.mjs';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PREBUILT_IMAGE = process.env.TERMBRIDGE_AGENT_IMAGE;
const IMAGE = PREBUILT_IMAGE ?? 'localhost/termbridge-agent:latest';
const BASE_IMAGE = 'docker.io/library/debian:bookworm-slim';
const AGENT_ID = 'parity';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// --- credentials and broker ------------------------------------------------

let credentials;
async function makeCredentials() {
  if (credentials) return credentials;
  const parent = tempDir('tb-parity-creds-');
  cleanups.unshift(() => fs.rmSync(parent, { recursive: true, force: true }));  // runs last
  const dir = path.join(parent, 'credentials');
  await run(path.join(ROOT, 'deploy/make-credentials.sh'), ['--dir', dir, '--days', '2']);
  credentials = {
    dir,
    ca: path.join(dir, 'ca.pem'),
    cert: path.join(dir, 'broker.pem'),
    key: path.join(dir, 'broker.key'),
    token: path.join(dir, 'agent-token'),
  };
  return credentials;
}

// A broker in container listen mode: every address, TLS, the token from
// make-credentials.sh, the built-in policy (echo is allowed, printf asks).
async function startBroker() {
  const creds = await makeCredentials();
  const broker = await Broker.start({
    listen: '0.0.0.0:0',
    policy: null,
    // The shared token names the agent AGENT_ID, as its agents claim.
    extraArgs: ['--tls-cert', creds.cert, '--tls-key', creds.key, '--agent-token-file', creds.token,
      '--shared-agent-name', AGENT_ID],
    // The test's own host may be a container (CI sandboxes are), where the
    // broker runs only when forced.
    env: { TERMBRIDGE_ALLOW_IN_CONTAINER: 'true' },
  });
  cleanups.push(() => broker.stop());
  assert.equal(broker.ready.tls, true);
  return broker;
}

async function cli(broker, ...args) {
  const { stdout } = await run(CLI_BIN, ['--state-dir', broker.stateDir, ...args]);
  return stdout;
}

// --- the two ways to start an agent ------------------------------------------

async function connect(command, args, env) {
  const transport = new StdioClientTransport({ command, args, env, stderr: 'pipe' });
  let log = '';
  transport.stderr?.on('data', (chunk) => { log += chunk; });
  const client = new Client({ name: 'termbridge-parity', version: '0.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`${command} did not speak MCP: ${e.message}\n${log}`);
  }
  cleanups.push(() => client.close());
  return { client, log: () => log };
}

const localLauncher = {
  name: 'local process',
  // The agent on the broker's host: loopback, the same TLS and token.
  async start(port, env = {}) {
    const creds = await makeCredentials();
    return connect(AGENT_BIN, [], {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? '/tmp',
      TERMBRIDGE_AGENT_ID: AGENT_ID,
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port),
      TERMBRIDGE_BRIDGE_TOKEN_FILE: creds.token,
      TERMBRIDGE_BRIDGE_TLS_CA_FILE: creds.ca,
      ...env,
    });
  },
};

let containerCount = 0;
const containerLauncher = {
  name: 'podman container',
  // `podman run -i` of the image, with the token and CA mounted where the
  // image expects its secrets; everything else is the image's defaults.
  async start(port, env = {}) {
    const creds = await makeCredentials();
    const name = `tb-parity-${process.pid}-${++containerCount}`;
    const envArgs = Object.entries({
      TERMBRIDGE_AGENT_ID: AGENT_ID,
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port),
      ...env,
    }).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    cleanups.push(async () => {
      await run('podman', ['rm', '-f', '--time', '2', name]).catch(() => {});
    });
    return connect('podman', [
      'run', '-i', '--rm', '--name', name, ...envArgs,
      '-v', `${creds.token}:/run/secrets/termbridge_agent_token:ro`,
      '-v', `${creds.ca}:/run/secrets/termbridge_ca:ro`,
      IMAGE,
    ], { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp' });
  },
};

// `docker run -i` of the image, in the private dockerd whose environment is
// `dockerEnv`: the same mounts as podman's, and docker's alias for the host
// (host.docker.internal:host-gateway, docker0's address), which podman 4.3
// refuses; the agent tries host.containers.internal first, which docker
// does not define.
let dockerEnv;
const dockerLauncher = {
  name: 'docker container',
  async start(port, env = {}) {
    const creds = await makeCredentials();
    const name = `tb-parity-docker-${process.pid}-${++containerCount}`;
    const envArgs = Object.entries({
      TERMBRIDGE_AGENT_ID: AGENT_ID,
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port),
      ...env,
    }).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    cleanups.push(async () => {
      await run(DOCKER, ['rm', '-f', name], { env: dockerEnv }).catch(() => {});
    });
    return connect(DOCKER, [
      'run', '-i', '--rm', '--name', name, '--add-host', 'host.docker.internal:host-gateway', ...envArgs,
      '-v', `${creds.token}:/run/secrets/termbridge_agent_token:ro`,
      '-v', `${creds.ca}:/run/secrets/termbridge_ca:ro`,
      IMAGE,
    ], { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp', DOCKER_HOST: dockerEnv.DOCKER_HOST });
  },
};

// --- canonical form ----------------------------------------------------------

// Ids become <kind#n> by first appearance (so "the same terminal again"
// survives), timings and cursors become placeholders, and what names the
// route to the broker (addresses, aliases tried) is reduced to its shape.
function canonicalize(value) {
  const ids = new Map();
  const counters = {};
  const idFor = (raw) => {
    if (!ids.has(raw)) {
      const kind = raw.slice(0, raw.indexOf('_'));
      counters[kind] = (counters[kind] ?? 0) + 1;
      ids.set(raw, `<${kind}#${counters[kind]}>`);
    }
    return ids.get(raw);
  };
  const ID = /\b(?:s|t|a|req|trace|rt|b|h)_[0-9A-Za-z]{6,}\b/g;
  const walk = (v, key) => {
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v && typeof v === 'object') {
      const out = {};
      for (const k of Object.keys(v).sort()) out[k] = walk(v[k], k);
      return out;
    }
    if (typeof v === 'string') {
      if (/(_at|time)$/.test(key ?? '')) return '<time>';
      if (['address', 'aliases_tried', 'host', 'broker_instance_id', 'runtime_session_id'].includes(key)) {
        return '<route>';
      }
      // The text content repeats an error's details as JSON: its route too.
      if (key === 'text') {
        v = v.replace(/"aliases_tried":\[[^\]]*\]/g, '"aliases_tried":"<route>"')
          .replace(/"attempts":\[(?:\{[^}]*\},?)*\]/g, '"attempts":"<route>"')
          .replace(/"address":"[^"]*"/g, '"address":"<route>"')
          .replace(/"port":\d+/g, '"port":"<port>"');
      }
      return v.replace(ID, idFor);
    }
    if (typeof v === 'number') {
      // The broker's port is picked afresh (port 0) for each run.
      if (key === 'cursor' || key === 'pid' || key === 'port') return `<${key}>`;
      if (/(_ms|duration|elapsed)/.test(key ?? '') && key !== 'timeout_ms' && key !== 'connect_timeout_ms') {
        return '<ms>';
      }
    }
    return v;
  };
  const out = walk(value);
  // Attempts list one entry per host tried: its length depends on the route.
  const dropAttempts = (v) => {
    if (Array.isArray(v)) return v.map(dropAttempts);
    if (v && typeof v === 'object') {
      for (const k of Object.keys(v)) {
        if (k === 'attempts' || k === 'aliases_tried') v[k] = '<route>';
        else dropAttempts(v[k]);
      }
    }
    return v;
  };
  return dropAttempts(out);
}

// --- the scenario matrix -------------------------------------------------------

const execute = (agent, command, extra = {}) => terminal(agent.client, {
  action: 'execute', execution: { command }, runtime: { timeout_ms: 20000 }, ...extra,
});

// Runs every scenario with agents from `launcher`; returns { name: result }.
async function runMatrix(launcher) {
  const results = {};
  const broker = await startBroker();
  const approvals = watchApprovals(broker);
  cleanups.push(() => approvals.stop());
  const agent = await launcher.start(broker.port);

  results.execute_auto_allowed = await execute(agent, 'echo parity-auto');

  const granted = execute(agent, "printf 'approved %s\\n' parity");
  const request = await approvals.next();
  results.approval_request = request;
  await cli(broker, 'approvals', 'approve', request.approval_id, '--approver', 'parity-person');
  results.approval_granted = await granted;

  const declined = execute(agent, "printf 'never %s\\n' runs");
  const toDeny = await approvals.next();
  await cli(broker, 'approvals', 'deny', toDeny.approval_id, '--note', 'not on this host');
  results.approval_denied = await declined;

  results.blocked_destructive = await execute(agent, 'rm -rf /');

  results.headless_allowed = await terminal(agent.client, {
    action: 'execute', invocation: { mode: 'headless' }, execution: { command: 'echo', args: ['headless-ok'] },
  });
  results.headless_refused = await terminal(agent.client, {
    action: 'execute', invocation: { mode: 'headless' },
    execution: { command: 'curl', args: ['-s', 'https://example.invalid/'] },
  });

  const sleeping = await execute(agent, 'tail -f /dev/null', { runtime: { timeout_ms: 300 } });
  results.terminate_started = sleeping;
  results.terminate = await terminal(agent.client, {
    action: 'terminate', target: { session_id: sleeping.identity.session_id },
  });
  results.terminate_read = await terminal(agent.client, {
    action: 'read_output', target: { session_id: sleeping.identity.session_id }, wait_ms: 5000,
  });

  results.list = await terminal(agent.client, { action: 'list' });

  // Request timeout: a second agent with a 1 s deadline, connected, then the
  // broker stops answering (SIGSTOP) and the next call runs out of time.
  const impatient = await launcher.start(broker.port, { PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS: '1000' });
  const warm = await terminal(impatient.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(warm.success, true, JSON.stringify(warm));
  await broker.freeze();
  try {
    results.request_timeout = await execute(impatient, 'echo too-late');
  } finally {
    broker.thaw();
  }

  // Broker down: nothing listens on its port any more.
  const port = broker.port;
  await broker.stop();
  const orphan = await launcher.start(port, { PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS: '1500' });
  results.broker_down = await execute(orphan, 'echo nobody-home');
  return results;
}

// TERMBRIDGE_PARITY_DUMP=DIR keeps each run's raw and canonical results there.
function dump(name, results) {
  const dir = process.env.TERMBRIDGE_PARITY_DUMP;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  const slug = name.replace(/\W+/g, '-');
  fs.writeFileSync(path.join(dir, `${slug}.raw.json`), JSON.stringify(results, null, 2));
  fs.writeFileSync(path.join(dir, `${slug}.canonical.json`), JSON.stringify(canonicalize(results), null, 2));
}

// What each scenario must show, whichever way the agent runs.
function checkMatrix(r) {
  const ok = (x) => assert.equal(x.success, true, JSON.stringify(x));
  const code = (x, c) => assert.equal(x.error?.code, c, JSON.stringify(x));
  ok(r.execute_auto_allowed);
  assert.equal(r.execute_auto_allowed.result.stdout, 'parity-auto\n');
  assert.equal(r.execute_auto_allowed.result.approval.state, 'allowed');
  ok(r.approval_granted);
  assert.equal(r.approval_granted.result.stdout, 'approved parity\n');
  assert.equal(r.approval_granted.result.approval.decided_by, 'parity-person');
  code(r.approval_denied, 'PM_TERM_DECLINED');
  assert.match(r.approval_denied.error.message, /not on this host/);
  code(r.blocked_destructive, 'PM_TERM_BLOCKED_DESTRUCTIVE');
  ok(r.headless_allowed);
  assert.equal(r.headless_allowed.result.stdout, 'headless-ok\n');
  code(r.headless_refused, 'PM_TERM_BLOCKED_DESTRUCTIVE');
  assert.equal(r.terminate_started.status, 'accepted', JSON.stringify(r.terminate_started));
  ok(r.terminate);
  assert.equal(r.terminate_read.result.running, false, JSON.stringify(r.terminate_read));
  ok(r.list);
  code(r.request_timeout, 'PM_TERM_TIMEOUT');
  code(r.broker_down, 'PM_TERM_GUI_UNAVAILABLE');
}

// --- the two runs --------------------------------------------------------------

async function podmanUnavailable() {
  try {
    await run('podman', ['--version']);
  } catch {
    return 'podman is not installed (deploy/setup.sh installs podman, runc and podman-compose)';
  }
  try {
    await run('podman', ['info']);
  } catch (e) {
    return `podman does not work here (podman info: ${String(e.stderr ?? e.message).trim().split('\n').pop()})`;
  }
  try {
    await run('podman', ['image', 'exists', BASE_IMAGE]);
  } catch {
    return `podman has no ${BASE_IMAGE} image (deploy/setup.sh makes one with debootstrap)`;
  }
  return null;
}

// podman build of deploy/Containerfile, from the repository root, once per run.
let built;
async function buildImage(t) {
  built ??= buildImageNow(t);
  await built;
}
async function buildImageNow(t) {
  const started = Date.now();
  const build = spawn('podman', ['build', '--pull=never', '-f', 'deploy/Containerfile', '-t', IMAGE, '.'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  build.stdout.on('data', (d) => { log += d; });
  build.stderr.on('data', (d) => { log += d; });
  const [code] = await once(build, 'exit');
  assert.equal(code, 0, `podman build failed:\n${log.slice(-4000)}`);
  t.diagnostic(`podman build of ${IMAGE} took ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

let localCanonical;

test('the scenario matrix with the agent as a local process', async () => {
  const results = await runMatrix(localLauncher);
  dump(localLauncher.name, results);
  checkMatrix(results);
  localCanonical = canonicalize(results);
});

test('the same matrix with the agent in a podman container gives identical results', async (t) => {
  const reason = await podmanUnavailable();
  if (reason) {
    t.skip(reason);
    return;
  }
  if (!PREBUILT_IMAGE) await buildImage(t);
  const results = await runMatrix(containerLauncher);
  dump(containerLauncher.name, results);
  checkMatrix(results);
  const containerCanonical = canonicalize(results);
  assert.ok(localCanonical, 'the local run finished first');
  assert.deepEqual(containerCanonical, localCanonical);
});

test('the same matrix with the agent in a docker container gives identical results', async (t) => {
  const docker = await startDockerd(cleanups);
  if (docker.skip) {
    t.skip(docker.skip);
    return;
  }
  // The image comes from podman's build unless docker builds it.
  const reason = DOCKER_BUILD ? null : await podmanUnavailable();
  if (reason) {
    t.skip(reason);
    return;
  }
  if (!PREBUILT_IMAGE && !DOCKER_BUILD) await buildImage(t);
  await agentImageForDocker(t, IMAGE, docker.env, { prebuilt: true });
  dockerEnv = docker.env;
  const started = Date.now();
  const results = await runMatrix(dockerLauncher);
  t.diagnostic(`the matrix under docker took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  dump(dockerLauncher.name, results);
  checkMatrix(results);
  assert.ok(localCanonical, 'the local run finished first');
  assert.deepEqual(canonicalize(results), localCanonical);
});

// compose.yaml as people use it: podman-compose 1.0.3 starts the `agent`
// service (MCP over HTTP, published on the host's loopback), its healthcheck
// passes, and an execute over HTTP gives the same canonical result as the
// local agent's first execute.
test('compose.yaml: podman-compose serves the agent over HTTP, healthy, with the same result', async (t) => {
  const reason = (await podmanUnavailable())
    ?? (await run('podman-compose', ['version']).then(() => null, () => 'podman-compose is not installed'));
  if (reason) {
    t.skip(reason);
    return;
  }
  if (!PREBUILT_IMAGE) await buildImage(t);
  const broker = await startBroker();
  const creds = await makeCredentials();
  const project = `tbparity${process.pid}`;
  const container = `tb-parity-compose-${process.pid}`;
  const env = {
    ...process.env,
    TERMBRIDGE_CREDENTIALS_DIR: creds.dir,
    TERMBRIDGE_BROKER_PORT: String(broker.port),
    TERMBRIDGE_AGENT_HTTP_PORT: '',  // a free host port
    TERMBRIDGE_AGENT_CONTAINER: container,
    TERMBRIDGE_AGENT_ID: AGENT_ID,
  };
  const compose = (...args) => run('podman-compose', ['-p', project, '-f', path.join(ROOT, 'compose.yaml'), ...args],
    { cwd: ROOT, env });
  cleanups.push(async () => {
    await compose('down').catch(() => {});
    await run('podman', ['rm', '-f', container]).catch(() => {});
    await run('podman', ['network', 'rm', '-f', `${project}_default`]).catch(() => {});
  });
  // Follow the container's log from the start: the agent says when it serves.
  const serving = new Promise((resolve, reject) => {
    const follow = () => {
      const logs = spawn('podman', ['logs', '-f', container], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      const onData = (d) => {
        text += d;
        if (/event=serving transport=http/.test(text)) resolve(text);
      };
      logs.stdout.on('data', onData);
      logs.stderr.on('data', onData);
      logs.on('exit', () => {
        if (!/event=serving/.test(text)) reject(new Error(`the agent container stopped:\n${text}`));
      });
      cleanups.push(async () => { logs.kill(); });
    };
    compose('up', '-d', 'agent').then(follow, reject);
  });
  await serving;
  const { stdout: published } = await run('podman', ['port', container, '45461/tcp']);
  const address = published.trim().split('\n')[0];
  assert.match(address, /^127\.0\.0\.1:\d+$/, 'published on the host loopback only');
  const health = await run('podman', ['healthcheck', 'run', container]).then(() => 'healthy', (e) => e.stdout + e.stderr);
  assert.equal(health, 'healthy');

  // The agent requires the HTTP token make-credentials.sh made.
  const httpToken = fs.readFileSync(path.join(creds.dir, 'agent-http-token'), 'utf8').trim();
  const transport = new StreamableHTTPClientTransport(new URL(`http://${address}/mcp`),
    { requestInit: { headers: { authorization: `Bearer ${httpToken}` } } });
  const client = new Client({ name: 'termbridge-parity-compose', version: '0.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  const viaCompose = await execute({ client }, 'echo parity-auto');
  assert.equal(viaCompose.success, true, JSON.stringify(viaCompose));
  const local = await runFirstExecuteLocally();
  assert.deepEqual(canonicalize(viaCompose), canonicalize(local));
});

// The first execute of a fresh local agent against a fresh broker.
async function runFirstExecuteLocally() {
  const broker = await startBroker();
  const agent = await localLauncher.start(broker.port);
  return execute(agent, 'echo parity-auto');
}

// The broker runs on the host (docs/operating.md). A container sign
// (here the `container` variable that podman and systemd-nspawn set) stops
// it with exit 2 unless it is forced.
test('the broker refuses to start in a container unless forced', async () => {
  const stateDir = tempDir('tb-parity-incontainer-');
  const env = { ...process.env, container: 'podman' };
  delete env.TERMBRIDGE_ALLOW_IN_CONTAINER;
  // (Its cleanup is registered before the forced broker's, so it runs after
  // it: the dir goes last.)
  const { code, log } = await expectExit(BROKER_BIN, ['--listen', '127.0.0.1:0', '--state-dir', stateDir],
    { env, cleanups, dir: stateDir, what: 'the broker with container=podman' });
  assert.equal(code, 2, log);
  assert.match(log, /refusing to run inside a container \(.*environment: container=podman/);
  assert.match(log, /--allow-in-container/);

  const forced = spawn(BROKER_BIN, ['--listen', '127.0.0.1:0', '--state-dir', stateDir,
    '--allow-in-container', '--ready-file', path.join(stateDir, 'ready.json')],
  { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = once(forced, 'exit');
  cleanups.push(async () => {
    if (forced.exitCode === null && forced.signalCode === null) forced.kill('SIGTERM');
    await exited;
  });
  const ready = await waitForJsonFile(path.join(stateDir, 'ready.json'), 15000, forced);
  assert.ok(ready.grpc_port > 0);
});
