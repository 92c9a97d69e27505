// The Debian package and the systemd user unit as a user meets them (issue
// 25; deploy/package.sh, deploy/package.cmake, deploy/termbridge-broker.service).
//
// Locally, with the build's broker: the unit's ExecStart, run as systemd would
// run it (its Environment=, %h as a fresh home) but without credentials, must
// exit with a code RestartPreventExitStatus= names (no restart loop) and one
// line naming the missing file and the command that makes it; with the
// credentials it serves.
//
// In a podman container from debian:bookworm-slim: deploy/package.sh packs
// the build's binaries into termbridge_<version>_<arch>.deb, `apt-get install ./termbridge_*.deb`
// installs it, and a plain user starts termbridge-broker with no flag but the
// console address: `termbridge` talks to it over the operator socket, the
// console serves its page and xterm.js from /usr/share/termbridge, the files
// the unit's Documentation= names exist, `systemd-analyze verify` accepts the
// unit, and the commented example config, every `# key = value` uncommented,
// is a configuration the broker starts with. The package's dependencies and
// systemd are installed in an image layer of their own (tagged
// localhost/termbridge-package-test), built once per set of dependencies and
// then reused; the test prints how long that build and the install took. It
// skips, saying why, only when podman or its base image is missing
// (deploy/setup.sh makes both).
//
// Under a real systemd user manager (systemd as the container's PID 1, the
// person's manager started by lingering): the installed unit, started as its
// header says, fails once without credentials (exit 2, no restart), serves
// after termbridge-make-credentials, reopens a rotated audit log on reload
// and stops cleanly.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { BROKER_BIN, expectExit, tempDir, removeDir, waitForJsonFile } from '../lib/harness.mjs';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const UNIT_FILE = path.join(ROOT, 'deploy/termbridge-broker.service');
const BUILD_DIR = path.resolve(path.dirname(BROKER_BIN), '..');
const BASE_IMAGE = 'docker.io/library/debian:bookworm-slim';
const TEST_IMAGE = 'localhost/termbridge-package-test:latest';

const cleanups = [];
let builtDeb = null;  // the .deb the package test made, for the unit test after it
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// --- the unit ------------------------------------------------------------------

// The unit's settings as systemd reads them: continuation lines joined,
// comments dropped, repeated keys collected in order.
function parseUnit(text) {
  const settings = {};
  const joined = text.replace(/\\\n\s*/g, ' ');
  for (const line of joined.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) (settings[m[1]] ??= []).push(m[2].trim());
  }
  return settings;
}

// ExecStart as argv, with %h and ${NAME} expanded the way systemd does.
function unitCommand(unit, home) {
  const env = {};
  for (const assignment of unit.Environment ?? []) {
    const eq = assignment.indexOf('=');
    env[assignment.slice(0, eq)] = assignment.slice(eq + 1).replaceAll('%h', home);
  }
  const argv = unit.ExecStart[0].split(/\s+/).map((word) => word.replaceAll('%h', home)
    .replace(/\$\{([A-Z_]+)\}/g, (_, name) => env[name] ?? ''));
  return { argv, env };
}

const unit = parseUnit(fs.readFileSync(UNIT_FILE, 'utf8'));

test('the unit: installed paths, no restart after a broken configuration, documentation it names', () => {
  assert.equal(unit.ExecStart.length, 1);
  assert.match(unit.ExecStart[0], /^\/usr\/bin\/termbridge-broker /, 'ExecStart runs the installed broker');
  assert.equal(unit.Restart?.[0], 'on-failure');
  assert.ok(unit.RestartPreventExitStatus?.length, 'RestartPreventExitStatus= is set');
  const docs = unit.Documentation.flatMap((d) => d.split(/\s+/));
  assert.ok(docs.length > 0);
  for (const url of docs) {
    // file:///usr/share/doc/termbridge/X is the repository's X (deploy/package.cmake).
    const m = /^file:\/\/\/usr\/share\/doc\/termbridge\/(.+)$/.exec(url);
    assert.ok(m, `Documentation=${url} is a file the package installs`);
    assert.ok(fs.existsSync(path.join(ROOT, m[1])), `${m[1]} exists in the repository`);
  }
  assert.match(fs.readFileSync(UNIT_FILE, 'utf8'),
    /systemctl --user import-environment DISPLAY WAYLAND_DISPLAY XAUTHORITY/,
    'the unit says how a window gets a display');
});

test('the unit\'s ExecStart without credentials exits with RestartPreventExitStatus and names the missing file and the fix', async () => {
  const home = tempDir('tb-unit-home-');
  cleanups.push(() => removeDir(home));
  const { argv, env } = unitCommand(unit, home);
  const prevented = unit.RestartPreventExitStatus.flatMap((s) => s.split(/\s+/)).map(Number);
  // The broker's container check would stop it first on a rig that is a
  // container; the unit runs on a host.
  const runEnv = { PATH: process.env.PATH, HOME: home, ...env, TERMBRIDGE_ALLOW_IN_CONTAINER: 'true' };
  const credentials = env.TERMBRIDGE_CREDENTIALS_DIR;
  assert.ok(credentials?.startsWith(home), 'the unit keeps the credentials in the home directory');

  const startWithout = async (what) => {
    const { code, log } = await expectExit(BROKER_BIN, argv.slice(1),
      { env: runEnv, cleanups, what: `the broker without ${what}` });
    assert.ok(prevented.includes(code),
      `exit ${code} is one RestartPreventExitStatus= names (${prevented}); stderr:\n${log}`);
    const errors = log.split('\n').filter((l) => /\[(critical|error)\]/.test(l));
    assert.equal(errors.length, 1, `one line says what is wrong:\n${log}`);
    return errors[0];
  };

  // Nothing made yet: the first credential the broker reads is named.
  const first = await startWithout('any credentials');
  const named = first.match(new RegExp(`${credentials}/[a-z.-]+`))?.[0];
  assert.ok(named && !fs.existsSync(named), `names a missing file under ${credentials}: ${first}`);
  assert.match(first, /termbridge-make-credentials/, 'says how to make it');

  // Everything but the certificate.
  await run(path.join(ROOT, 'deploy/make-credentials.sh'), ['--dir', credentials, '--days', '2'],
    { env: { ...process.env, HOME: home } });
  fs.rmSync(path.join(credentials, 'broker.pem'));
  const line = await startWithout('broker.pem');
  assert.ok(line.includes(path.join(credentials, 'broker.pem')), line);
  assert.match(line, /termbridge-make-credentials/, line);

  // With them all, the same command line serves (on a free port here).
  await run(path.join(ROOT, 'deploy/make-credentials.sh'), ['--dir', credentials, '--days', '2'],
    { env: { ...process.env, HOME: home } });
  const broker = spawn(BROKER_BIN, argv.slice(1), {
    env: { ...runEnv, TERMBRIDGE_LISTEN: '127.0.0.1:0' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  broker.stderr.on('data', (d) => { log += d; });
  const exited = once(broker, 'exit');
  cleanups.push(async () => { if (broker.exitCode === null) broker.kill('SIGKILL'); });
  const readyFile = argv[argv.indexOf('--ready-file') + 1];
  const ready = await waitForJsonFile(readyFile, 20000, broker);
  assert.equal(ready.tls, true, log);
  broker.kill('SIGTERM');
  const [code] = await exited;
  assert.equal(code, 0, log);
});

// --- the package in a container --------------------------------------------------

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

// Runs `command` to its end; rejects with its output when it fails.
async function runLogged(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}:\n${(err + out).slice(-6000)}`);
  return { out, err };
}

// Package names of a control field: the first of each alternative, no versions.
function packageNames(field) {
  return field.split(',').map((d) => d.split('|')[0].trim().split(/\s/)[0]).filter(Boolean);
}

// What runs in the container as root: install the package as a user would,
// then the user's part as a plain user, then copy what it wrote to /out.
const ROOT_SCRIPT = String.raw`
set -euo pipefail
# A registry's bookworm-slim leaves /usr/share/doc out of every package.
rm -f /etc/dpkg/dpkg.cfg.d/docker
cd /pkg
start=$(date +%s%N)
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./termbridge_*.deb >/out/apt.log 2>&1 ||
  { cat /out/apt.log >&2; exit 1; }
echo $(( ($(date +%s%N) - start) / 1000000 )) >/out/install_ms
dpkg -L termbridge >/out/files
cp /usr/lib/systemd/user/termbridge-broker.service /out/installed.service
systemd-analyze verify /usr/lib/systemd/user/termbridge-broker.service >/out/verify.log 2>&1
echo $? >/out/verify.code
find / -xdev -name xterm.js -not -path '/pkg/*' >/out/xterm_copies
useradd -m person
install -o person -m 0644 /pkg/user.sh /home/person/user.sh
runuser -u person -- bash /home/person/user.sh
cp -r /home/person/out/. /out/
`;

// The user's part: a broker with the console, termbridge against it, then a
// broker with the example config uncommented.
const USER_SCRIPT = String.raw`
set -euo pipefail
cd ~
out=~/out
mkdir -p "$out"
# The container is the test rig: the broker refuses to run in one otherwise.
export TERMBRIDGE_ALLOW_IN_CONTAINER=true

# Starts the broker with "$@", its stderr in $out/$log, and returns once it
# logs event=serving (or fails when it exits first).
start_broker() {
  local log=$1; shift
  exec 3< <(exec termbridge-broker "$@" 2>&1)
  broker_pid=$!
  while IFS= read -r -t 30 line <&3; do
    printf '%s\n' "$line" >>"$out/$log"
    case $line in *event=serving*) cat <&3 >>"$out/$log" & return 0 ;; esac
  done
  echo "termbridge-broker $* did not serve; its log:" >&2; cat "$out/$log" >&2; return 1
}
stop_broker() {
  kill -TERM "$broker_pid"
  while kill -0 "$broker_pid" 2>/dev/null; do wait "$broker_pid" 2>/dev/null || true; done
}

start_broker broker.log --console 127.0.0.1:45460 --ready-file "$out/ready.json"
termbridge --json doctor >"$out/doctor.json" || true   # exit 1: a check failed (no display here)
termbridge --json sessions >"$out/sessions.json"
token=$(sed -n 's/.*token=\([0-9A-Za-z_-]*\).*/\1/p' "$out/ready.json")
for asset in index.html xterm.js; do
  exec 4<>/dev/tcp/127.0.0.1/45460
  printf 'GET /%s HTTP/1.1\r\nHost: 127.0.0.1:45460\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' \
    "$asset" "$token" >&4
  cat <&4 >"$out/$asset.http"
  exec 4<&-
done
stop_broker

sed -E 's/^# ([a-z_]+ = )/\1/' /usr/share/doc/termbridge/examples/broker.toml >example.toml
grep -cE '^[a-z_]+ = ' example.toml >"$out/example_keys"
start_broker example.log --config example.toml --state-dir ~/state2 --console 127.0.0.1:0 \
  --ready-file "$out/ready2.json"
stop_broker
`;

// The HTTP response in `file`: status code and body bytes.
function httpResponse(file) {
  const raw = fs.readFileSync(file);
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, split).toString('latin1');
  return { status: Number(head.split(' ')[1]), head, body: raw.subarray(split + 4) };
}

test('the .deb installs with apt in bare bookworm and works from its installed paths', async (t) => {
  const reason = await podmanUnavailable();
  if (reason) {
    t.skip(reason);
    return;
  }
  const work = tempDir('tb-package-');
  cleanups.push(() => removeDir(work));
  const pkgDir = path.join(work, 'pkg');
  const outDir = path.join(work, 'out');
  fs.mkdirSync(outDir);

  let started = Date.now();
  const { out: debPath } = await runLogged(path.join(ROOT, 'deploy/package.sh'),
    ['--build-dir', BUILD_DIR, '--out', pkgDir, '--no-build']);
  const deb = debPath.trim();
  builtDeb = deb;
  t.diagnostic(`deploy/package.sh took ${((Date.now() - started) / 1000).toFixed(1)} s: ${deb}`);
  assert.match(path.basename(deb), /^termbridge_\d+\.\d+\.\d+_[a-z0-9]+\.deb$/);
  const field = async (name) => (await run('dpkg-deb', ['-f', deb, name])).stdout.trim();
  const depends = await field('Depends');
  // dpkg-shlibdeps found the shared libraries the binaries link.
  for (const lib of ['libc6', 'libgrpc++', 'libprotobuf', 'libssl3']) {
    assert.ok(depends.includes(lib), `Depends names ${lib}: ${depends}`);
  }
  const { stdout: contents } = await run('dpkg-deb', ['-c', deb]);
  for (const file of ['usr/bin/termbridge-broker', 'usr/bin/termbridge', 'usr/bin/termbridge-agent',
    'usr/bin/termbridge-make-credentials', 'usr/share/termbridge/console-assets/xterm.js',
    'usr/lib/systemd/user/termbridge-broker.service', 'usr/share/doc/termbridge/README.md',
    'usr/share/doc/termbridge/examples/broker.toml']) {
    assert.ok(contents.includes(`./${file}\n`), `the package holds /${file}`);
  }

  // The dependencies (and systemd, for systemd-analyze) in a cached layer.
  // dbus and libpam-systemd: a person's user manager (user@.service) needs them.
  const deps = [...new Set(['systemd', 'dbus', 'libpam-systemd', ...packageNames(depends), ...packageNames(await field('Recommends'))])];
  const containerfile = `FROM ${BASE_IMAGE}\n` +
    'RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ' +
    `--no-install-recommends ${deps.sort().join(' ')} && rm -rf /var/lib/apt/lists/*\n`;
  const context = path.join(work, 'image');
  fs.mkdirSync(context);
  fs.writeFileSync(path.join(context, 'Containerfile'), containerfile);
  started = Date.now();
  await runLogged('podman', ['build', '--pull=never', '-q', '-t', TEST_IMAGE, context]);
  t.diagnostic(`image with the dependencies: ${((Date.now() - started) / 1000).toFixed(1)} s (cached after the first build)`);

  fs.writeFileSync(path.join(pkgDir, 'user.sh'), USER_SCRIPT);
  const name = `tb-package-${process.pid}`;
  cleanups.push(() => run('podman', ['rm', '-f', '--time', '2', name]).catch(() => {}));
  started = Date.now();
  await runLogged('podman', ['run', '--rm', '--name', name, '-v', `${pkgDir}:/pkg:ro`,
    '-v', `${outDir}:/out`, TEST_IMAGE, 'bash', '-c', ROOT_SCRIPT]);
  const read = (file) => fs.readFileSync(path.join(outDir, file), 'utf8');
  t.diagnostic(`container run ${((Date.now() - started) / 1000).toFixed(1)} s, of which apt-get ` +
    `update and install ${read('install_ms').trim()} ms`);

  // termbridge reached the broker over its operator socket.
  const doctor = JSON.parse(read('doctor.json'));
  const brokerCheck = doctor.checks.find((c) => c.id === 'broker');
  assert.equal(brokerCheck?.status, 'ok', JSON.stringify(doctor.checks, null, 1));
  assert.match(brokerCheck.message, /termbridge-broker \d+\.\d+\.\d+/);
  assert.ok(Array.isArray(JSON.parse(read('sessions.json')).sessions), read('sessions.json'));

  // The console served the installed assets, the only copy in the container.
  assert.deepEqual(read('xterm_copies').trim().split('\n'),
    ['/usr/share/termbridge/console-assets/xterm.js']);
  for (const asset of ['index.html', 'xterm.js']) {
    const response = httpResponse(path.join(outDir, `${asset}.http`));
    assert.equal(response.status, 200, response.head);
    assert.ok(response.body.equals(fs.readFileSync(path.join(BUILD_DIR, 'console-assets', asset))),
      `${asset} is the build's`);
  }

  // The unit as installed: the repository's, verified by systemd, and the
  // documentation it names is there.
  assert.equal(read('installed.service'), fs.readFileSync(UNIT_FILE, 'utf8'));
  assert.equal(read('verify.code').trim(), '0', `systemd-analyze verify:\n${read('verify.log')}`);
  const files = new Set(read('files').split('\n'));
  for (const url of unit.Documentation.flatMap((d) => d.split(/\s+/))) {
    assert.ok(files.has(url.replace('file://', '')), `${url} is installed`);
  }

  // The example config names every setting of the broker's one table, and
  // with every `# key = value` uncommented it is one the broker runs with.
  const example = fs.readFileSync(path.join(ROOT, 'deploy/broker.toml'), 'utf8');
  const named = new Set([...example.matchAll(/^#\s+([a-z_]+) = /gm)].map((m) => m[1]));
  const settings = [...fs.readFileSync(path.join(ROOT, 'broker/server/broker_config.cc'), 'utf8')
    .matchAll(/\{"([a-z_]+)", Kind::/g)].map((m) => m[1]);
  assert.ok(settings.length > 30, 'read the table of settings');
  assert.deepEqual(settings.filter((s) => !named.has(s)), [], 'settings the example leaves out');
  assert.equal(Number(read('example_keys')), [...example.matchAll(/^# [a-z_]+ = /gm)].length);
  assert.match(read('example.log'), /event=serving/);
  assert.match(read('example.log'), /config_file=\S*example\.toml/);
});

// --- the unit under systemd ------------------------------------------------------

// Run as root in a container whose PID 1 is systemd: installs the package,
// starts the person's user manager and drives the unit as the unit's header
// tells a person to, writing what systemd reports to /out.
const SYSTEMD_SCRIPT = String.raw`
set -euo pipefail
rm -f /etc/dpkg/dpkg.cfg.d/docker
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /pkg/termbridge_*.deb >/out/apt.log 2>&1 ||
  { cat /out/apt.log >&2; exit 1; }
useradd -m person
loginctl enable-linger person
uid=$(id -u person)
for i in $(seq 100); do systemctl is-active -q user@$uid.service && break; sleep 0.1; done
systemctl is-active user@$uid.service
install -o person -m 0644 /pkg/unit.sh /home/person/unit.sh
chown person /out
runuser -u person -- env XDG_RUNTIME_DIR=/run/user/$uid bash /home/person/unit.sh
# By the identifier the unit's stdout stream carries: journald cannot tell
# the unit of a process that exited at once (the failed start) from its PID.
for i in $(seq 50); do
  journalctl --no-pager -o cat SYSLOG_IDENTIFIER=termbridge-broker >/out/journal.log
  grep -q config_error /out/journal.log && grep -q event=stopped /out/journal.log && break
  sleep 0.1
done
`;

const UNIT_SCRIPT = String.raw`
set -euo pipefail
cd ~
out=/out
unit=termbridge-broker
show() { systemctl --user show -p ActiveState,Result,ExecMainStatus,NRestarts "$unit"; }
# Polls until the unit's ActiveState is $1 (10 s at most).
wait_state() {
  for i in $(seq 100); do
    [ "$(systemctl --user show -P ActiveState "$unit")" = "$1" ] && return 0; sleep 0.1
  done
  echo "$unit never became $1:" >&2; show >&2; return 1
}
# The container is the test rig: the broker refuses to run in one otherwise.
mkdir -p ~/.config/systemd/user/$unit.service.d
printf '[Service]\nEnvironment=TERMBRIDGE_ALLOW_IN_CONTAINER=true\n' \
  >~/.config/systemd/user/$unit.service.d/container.conf
systemctl --user daemon-reload

# No credentials: it fails once, and after RestartSec= it has not restarted.
systemctl --user start "$unit"
wait_state failed
sleep 3
show >"$out/nocreds.txt"

# As the unit's header says.
termbridge-make-credentials >"$out/make-credentials.log" 2>&1
systemctl --user reset-failed "$unit"
systemctl --user enable --now "$unit" 2>"$out/enable.log"
ready=~/.local/state/termbridge/broker.ready.json
for i in $(seq 100); do [ -s "$ready" ] && break; sleep 0.1; done
show >"$out/running.txt"
systemctl --user is-enabled "$unit" >"$out/enabled.txt"
termbridge --json sessions >"$out/sessions.json"

# logrotate moves the audit log, then reload: the broker opens a new one.
audit=~/.local/state/termbridge/audit.jsonl
mv "$audit" "$audit.1"
systemctl --user reload "$unit"
for i in $(seq 100); do [ -s "$audit" ] && break; sleep 0.1; done
cp "$audit" "$out/audit-after-reload.jsonl"

systemctl --user stop "$unit"
show >"$out/stopped.txt"
`;

// systemctl show's KEY=value lines as an object.
function shown(text) {
  return Object.fromEntries(text.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

test('the installed unit under a real systemd user manager: no restart loop, serves with credentials, reload reopens the audit log', async (t) => {
  const reason = await podmanUnavailable();
  if (reason) {
    t.skip(reason);
    return;
  }
  assert.ok(builtDeb, 'the package test above built the .deb');
  const work = tempDir('tb-unit-');
  cleanups.push(() => removeDir(work));
  const pkgDir = path.join(work, 'pkg');
  const outDir = path.join(work, 'out');
  fs.mkdirSync(pkgDir);
  fs.mkdirSync(outDir);
  fs.copyFileSync(builtDeb, path.join(pkgDir, path.basename(builtDeb)));
  fs.writeFileSync(path.join(pkgDir, 'unit.sh'), UNIT_SCRIPT);

  const name = `tb-unit-${process.pid}`;
  cleanups.push(() => run('podman', ['rm', '-f', '--time', '0', name]).catch(() => {}));
  const started = Date.now();
  await runLogged('podman', ['run', '-d', '--systemd=always', '--name', name, '-v', `${pkgDir}:/pkg:ro`,
    '-v', `${outDir}:/out`, TEST_IMAGE, '/lib/systemd/systemd']);
  // `is-system-running --wait` answers once boot is over (degraded is over, too).
  await run('podman', ['exec', name, 'systemctl', 'is-system-running', '--wait']).catch(() => {});
  await runLogged('podman', ['exec', name, 'bash', '-c', SYSTEMD_SCRIPT]);
  t.diagnostic(`systemd container ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const read = (file) => fs.readFileSync(path.join(outDir, file), 'utf8');
  const journal = read('journal.log');

  // Without credentials: exit 2 once, no restart, one line naming the fix.
  const failed = shown(read('nocreds.txt'));
  assert.deepEqual(failed, { ActiveState: 'failed', Result: 'exit-code', ExecMainStatus: '2', NRestarts: '0' },
    `${read('nocreds.txt')}\n${journal}`);
  assert.match(journal, /config_error .*credentials\/[a-z.-]+.*termbridge-make-credentials/);

  // With them: enabled, running, and termbridge talks to it.
  assert.equal(read('enabled.txt').trim(), 'enabled');
  assert.equal(shown(read('running.txt')).ActiveState, 'active', journal);
  assert.ok(Array.isArray(JSON.parse(read('sessions.json')).sessions));
  assert.match(journal, /event=serving grpc=0\.0\.0\.0:45459 tls=true/);

  // Reload after rotation: the new log starts by naming the old one's end.
  const first = JSON.parse(read('audit-after-reload.jsonl').split('\n')[0]);
  assert.equal(first.event, 'audit_log_reopened', read('audit-after-reload.jsonl'));
  assert.match(journal, /event=audit_reopen reopened=true/);

  // Stop: SIGTERM drains and exits 0.
  assert.deepEqual(shown(read('stopped.txt')), { ActiveState: 'inactive', Result: 'success', ExecMainStatus: '0', NRestarts: '0' },
    journal);
});
