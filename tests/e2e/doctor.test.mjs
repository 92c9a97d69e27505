// `termbridge doctor` against real brokers (issue 25): a healthy set-up
// passes; a stopped, killed or frozen broker, an agent token left 0644, a
// policy file that no longer loads and a loopback listen while podman is
// here each give their own finding with its fix, in the JSON scripts read
// and in the lines people read. Doctor sees the broker's settings the way
// the broker does: XDG_CONFIG_HOME points at an empty directory so no
// config file of this machine leaks in.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFile, execFileSync } from 'node:child_process';
import { Broker, CLI_BIN, removeDir, runCli, tempDir } from '../lib/harness.mjs';

const scratch = tempDir('tb-doctor-');
const emptyConfig = path.join(scratch, 'config');
fs.mkdirSync(emptyConfig);
after(() => removeDir(scratch));

// Runs doctor for the broker in `stateDir`; resolves with its exit code,
// stdout, stderr and (with --json) the parsed report.
function doctor(stateDir, args = [], { json = true } = {}) {
  const argv = ['--state-dir', stateDir, ...(json ? ['--json'] : []), 'doctor', ...args];
  const env = { ...process.env, XDG_CONFIG_HOME: emptyConfig };
  delete env.TERMBRIDGE_CONFIG;
  return new Promise((resolve) => {
    execFile(CLI_BIN, argv, { env, timeout: 120000 }, (error, stdout, stderr) => {
      const code = error ? (error.code ?? 1) : 0;
      let report = null;
      if (json) {
        try { report = JSON.parse(stdout); } catch { /* asserted below */ }
      }
      resolve({ code, stdout, stderr, report });
    });
  });
}

const check = (report, id) => {
  const found = report.checks.find((c) => c.id === id);
  assert.ok(found, `a check ${id} in ${JSON.stringify(report.checks.map((c) => c.id))}`);
  return found;
};
const failures = (report) => report.checks.filter((c) => c.status === 'fail');

// The bridge networks podman reports here ([] without podman).
function podmanGateways() {
  try {
    const networks = JSON.parse(execFileSync('podman', ['network', 'ls', '--format', 'json'],
      { encoding: 'utf8', timeout: 20000, stdio: ['ignore', 'pipe', 'ignore'] }));
    return networks.flatMap((n) => (n.subnets ?? []).map((s) => s.gateway)).filter(Boolean);
  } catch {
    return [];
  }
}
const gateways = podmanGateways();
// The image --probe-container runs, when it was built on this machine.
function imagePresent(name) {
  try {
    execFileSync('podman', ['image', 'exists', name], { timeout: 20000, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// A server certificate made with the openssl command, naming what agents
// in containers dial and check.
function makeCertificate(dir) {
  const key = path.join(dir, 'broker.key');
  const cert = path.join(dir, 'broker.pem');
  const names = ['DNS:host.containers.internal', 'DNS:localhost', 'IP:127.0.0.1',
    ...gateways.map((g) => `IP:${g}`)].join(',');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
    '-nodes', '-keyout', key, '-out', cert, '-days', '90', '-subj', '/CN=termbridge-broker',
    '-addext', `subjectAltName=${names}`], { stdio: 'ignore' });
  fs.chmodSync(key, 0o600);
  return { cert, key };
}

test('a healthy set-up passes: the broker answers with its version and nothing fails', async () => {
  const broker = await Broker.start();
  try {
    // Something in the audit log for the chain check to verify.
    const added = await runCli(broker.stateDir, 'agents', 'add', 'doctor-test');
    assert.equal(added.code, 0, added.stderr);
    const result = await doctor(broker.stateDir, ['listen=127.0.0.1:0', 'window_command=none']);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    const { report } = result;
    assert.equal(report.ok, true);
    for (const c of report.checks) {
      assert.deepEqual(Object.keys(c).sort(), ['fix', 'id', 'message', 'status']);
      assert.ok(['ok', 'warn', 'fail'].includes(c.status), c.status);
      if (c.status !== 'ok') assert.notEqual(c.fix, '', `${c.id} says what to do`);
    }
    const brokerCheck = check(report, 'broker');
    assert.equal(brokerCheck.status, 'ok', brokerCheck.message);
    assert.match(brokerCheck.message, /termbridge-broker 0\.1\.0 \(protocol 1/);
    assert.ok(brokerCheck.message.includes(broker.ready.broker_instance_id), brokerCheck.message);
    assert.ok(brokerCheck.message.includes(`127.0.0.1:${broker.port}`), brokerCheck.message);
    // The same settings as the broker's: nothing differs.
    assert.equal(check(report, 'config').status, 'ok', check(report, 'config').message);
    for (const id of ['credentials.state_dir', 'credentials.agent_token', 'credentials.operator_socket',
      'policy', 'audit.writable', 'audit.chain']) {
      assert.equal(check(report, id).status, 'ok', `${id}: ${check(report, id).message}`);
    }
    assert.match(check(report, 'audit.chain').message, /audit chain intact: [1-9]\d* records/);
    assert.match(check(report, 'viewer.window').message, /window_command = none/);
    // No window and no console: only a watch shows terminals, and doctor says to keep one.
    assert.equal(check(report, 'viewer.watch').status, 'warn');
    assert.match(check(report, 'viewer.watch').fix, /keep `termbridge watch` running/);

    // Without --json: one line per check, and a summary.
    const text = await doctor(broker.stateDir, ['listen=127.0.0.1:0', 'window_command=none'],
      { json: false });
    assert.equal(text.code, 0, text.stdout);
    assert.match(text.stdout, /^ok {4}broker +termbridge-broker 0\.1\.0/m);
    assert.match(text.stdout, /^no check failed, \d+ warning\(s\)$/m);
  } finally {
    await broker.stop();
  }
});

test('settings the running broker does not share are named', async () => {
  const broker = await Broker.start();
  try {
    // Doctor resolves the default listen address; the broker was given another.
    const { code, report } = await doctor(broker.stateDir);
    assert.equal(code, 0);
    const config = check(report, 'config');
    assert.equal(config.status, 'warn');
    assert.match(config.message, new RegExp(`listen 127\\.0\\.0\\.1:45459 \\(the broker: 127\\.0\\.0\\.1:${broker.port}\\)`));
    assert.match(config.fix, /KEY=VALUE/);
  } finally {
    await broker.stop();
  }
});

test('doctor reads the broker\'s config file as the broker does, and a bad one fails', async () => {
  const broker = await Broker.start();
  try {
    const config = path.join(scratch, 'broker.toml');
    fs.writeFileSync(config, 'listen = "127.0.0.1:0"\nwindow_command = "none"\n');
    let { code, report } = await doctor(broker.stateDir, ['--config', config]);
    assert.equal(code, 0);
    assert.equal(check(report, 'config').status, 'warn', 'the broker itself read no file');
    assert.match(check(report, 'config').message, /config file .*broker\.toml/);
    assert.match(check(report, 'config').message, /config file .*broker\.toml \(the broker: \(none\)\)/);

    fs.writeFileSync(config, 'listen = "127.0.0.1:0"\nring_bytes = "lots"\n');
    ({ code, report } = await doctor(broker.stateDir, ['--config', config]));
    assert.equal(code, 1);
    const found = check(report, 'config');
    assert.equal(found.status, 'fail');
    assert.match(found.message, /broker\.toml:2: ring_bytes: must be an integer/);
    assert.match(found.fix, /refuses to start/);
  } finally {
    await broker.stop();
  }
});

test('a stopped, killed or frozen broker fails the broker check with what to do', async () => {
  const stateDir = tempDir('tb-doctor-state-');
  try {
    // Never started: no socket.
    let { code, report } = await doctor(stateDir);
    assert.equal(code, 1);
    assert.equal(report.ok, false);
    let found = check(report, 'broker');
    assert.equal(found.status, 'fail');
    assert.match(found.message, /no broker: .*operator\.sock does not exist/);
    assert.match(found.fix, /start it/);

    // Killed: its socket is left behind and nothing answers.
    let broker = await Broker.start({ stateDir });
    await broker.stop('SIGKILL');
    assert.ok(fs.existsSync(path.join(stateDir, 'operator.sock')), 'a stale socket');
    ({ code, report } = await doctor(stateDir));
    assert.equal(code, 1);
    found = check(report, 'broker');
    assert.equal(found.status, 'fail');
    assert.match(found.message, /no broker answers on .*operator\.sock \(a socket left by a broker that stopped\?\)/);
    assert.match(found.fix, /systemctl --user start termbridge-broker/);
    assert.equal(check(report, 'viewer.watch').status, 'warn');

    // Frozen (SIGSTOP): it holds the socket but does not answer.
    broker = await Broker.start({ stateDir, viewer: 'none' });
    try {
      await broker.freeze();
      ({ code, report } = await doctor(stateDir, ['--timeout-ms', '1000']));
      assert.equal(code, 1);
      found = check(report, 'broker');
      assert.equal(found.status, 'fail');
      assert.match(found.message, /did not answer within 1000 ms/);
      assert.match(found.fix, /kill -CONT/);
    } finally {
      await broker.stop();
    }
  } finally {
    removeDir(stateDir);
  }
});

test('an agent token left 0644 in the state dir is a warning with the chmod', async () => {
  const broker = await Broker.start();
  try {
    fs.chmodSync(broker.tokenFile, 0o644);
    const { code, report } = await doctor(broker.stateDir, ['listen=127.0.0.1:0', 'window_command=none']);
    assert.equal(code, 0, 'a warning does not fail');
    const found = check(report, 'credentials.agent_token');
    assert.equal(found.status, 'warn');
    assert.match(found.message, /is 0644: group or others can read it/);
    assert.equal(found.fix, `chmod 600 ${broker.tokenFile}`);
  } finally {
    await broker.stop();
  }
});

test('a policy file that no longer loads fails, naming the line, while the broker runs on', async () => {
  const broker = await Broker.start();
  try {
    const policyFile = path.join(broker.stateDir, 'policy.toml');
    fs.writeFileSync(policyFile, 'version = 1\ndefault = "allow"\n[[rule]\n');
    const { code, report } = await doctor(broker.stateDir, ['listen=127.0.0.1:0', 'window_command=none']);
    assert.equal(code, 1);
    assert.deepEqual(failures(report).map((c) => c.id), ['policy']);
    const found = check(report, 'policy');
    assert.match(found.message, /policy\.toml.*3/);
    assert.match(found.fix, /keeps its last valid version/);
    assert.equal(check(report, 'broker').status, 'ok');

    const text = await doctor(broker.stateDir, ['listen=127.0.0.1:0', 'window_command=none'], { json: false });
    assert.equal(text.code, 1);
    assert.match(text.stdout, /^fail {2}policy +policy file does not load: /m);
    assert.match(text.stdout, /^ {6}fix: fix the line named/m);
    assert.match(text.stdout, /^1 check\(s\) failed/m);
  } finally {
    await broker.stop();
  }
});

test('a loopback listen while podman is here: containers cannot reach the broker', {
  skip: gateways.length === 0 && 'podman with a bridge network is not here',
}, async () => {
  const broker = await Broker.start();
  try {
    const { report } = await doctor(broker.stateDir, ['listen=127.0.0.1:0', 'window_command=none']);
    const found = check(report, 'container_reach');
    assert.equal(found.status, 'warn');
    assert.match(found.message, new RegExp(`listens on 127\\.0\\.0\\.1:${broker.port} only: an agent in a container cannot reach it`));
    assert.ok(found.message.includes(gateways[0]), `${found.message} names ${gateways[0]}`);
    assert.match(found.fix, new RegExp(`listen on 0\\.0\\.0\\.0:${broker.port}`));

    // A real container on podman's network agrees (only with an image already here).
    if (imagePresent('localhost/termbridge-agent:latest')) {
      const probed = await doctor(broker.stateDir,
        ['listen=127.0.0.1:0', 'window_command=none', '--probe-container']);
      assert.equal(probed.code, 1);
      const probe = check(probed.report, 'container_reach.probe');
      assert.equal(probe.status, 'fail', probe.message);
      assert.match(probe.message, new RegExp(`failed [0-9.]+:${broker.port}`));
    }
  } finally {
    await broker.stop();
  }
});

test('a container-ready broker (0.0.0.0 with TLS) passes the container and TLS checks', {
  skip: gateways.length === 0 && 'podman with a bridge network is not here',
}, async () => {
  const { cert, key } = makeCertificate(scratch);
  const broker = await Broker.start({
    listen: '0.0.0.0:0', extraArgs: ['--tls-cert', cert, '--tls-key', key],
  });
  try {
    const settings = ['listen=0.0.0.0:0', 'window_command=none', `tls_cert=${cert}`, `tls_key=${key}`];
    const { code, report } = await doctor(broker.stateDir, settings);
    assert.equal(code, 0, JSON.stringify(failures(report)));
    const reach = check(report, 'container_reach');
    assert.equal(reach.status, 'ok', reach.message);
    // podman makes a network's bridge (and its gateway address) with the
    // first container on it; until then there is nothing to answer there.
    // (os.networkInterfaces leaves out interfaces that are down; `ip` does not.)
    const local = execFileSync('ip', ['-o', 'addr', 'show'], { encoding: 'utf8' });
    if (gateways.some((g) => new RegExp(`inet6? ${g.replaceAll('.', '\\.')}/`).test(local))) {
      assert.match(reach.message, /each answering from this host/);
    } else {
      assert.match(reach.message, /not on this host yet/);
    }
    assert.equal(check(report, 'tls.certificate').status, 'ok', check(report, 'tls.certificate').message);
    const names = check(report, 'tls.names');
    assert.equal(names.status, 'ok', names.message);
    assert.match(names.message, /host\.containers\.internal/);

    // A container dials the port at the gateway (only with an image already here).
    if (imagePresent('localhost/termbridge-agent:latest')) {
      const probed = await doctor(broker.stateDir, [...settings, '--probe-container']);
      const probe = check(probed.report, 'container_reach.probe');
      assert.equal(probe.status, 'ok', probe.message);
      assert.match(probe.message, new RegExp(`: reached [0-9.]+:${broker.port}`));
    }

    // A name agents dial that the certificate lacks.
    const wrong = await doctor(broker.stateDir, [...settings, '--tls-name', 'broker.example.internal']);
    assert.equal(wrong.code, 1);
    assert.equal(check(wrong.report, 'tls.names').status, 'fail');
    assert.match(check(wrong.report, 'tls.names').message, /lacks broker\.example\.internal/);
  } finally {
    await broker.stop();
  }
});
