// The tests' Docker: a private dockerd (tests/support/dockerd.sh) and the
// agent image in it. Used by tests/e2e/docker.test.mjs and the docker half
// of tests/e2e/parity.test.mjs; ctest runs them one at a time (RESOURCE_LOCK
// dockerd), since one daemon at a time owns docker0 and the image cache.
//
// The image: by default the one podman builds for the podman half of the
// parity test (podman's layer cache keeps that cheap), handed to docker with
// `podman save | docker load` (about 15 s): one image build per run, shared.
// TERMBRIDGE_DOCKER_BUILD=1 builds deploy/Containerfile with docker itself
// instead; docker's layers stay in TERMBRIDGE_DOCKER_DATA_ROOT between runs
// (a first build from nothing took about 20 minutes on a busy 2-CPU
// machine, a rebuild without agent changes seconds).
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const HELPER = path.join(ROOT, 'tests/support/dockerd.sh');
export const DOCKER_BUILD = process.env.TERMBRIDGE_DOCKER_BUILD === '1';

// The docker client: Debian's (docker.io), else whichever is on PATH.
export const DOCKER = fs.existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker';

// Starts the private dockerd; returns { env } (DOCKER_HOST added to
// process.env) or { skip: reason }. Its stop is pushed onto `cleanups`.
export async function startDockerd(cleanups) {
  try {
    await run('docker-compose', ['version']);
  } catch {
    return { skip: 'docker-compose is not installed (deploy/setup.sh installs docker.io and docker-compose)' };
  }
  // A short directory: dockerd's sockets live under it (108-byte limit).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tbdk-'));
  cleanups.push(async () => {
    await run(HELPER, ['stop', dir]).catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  });
  try {
    const { stdout } = await run(HELPER, ['start', dir], { timeout: 180000 });
    return { env: { ...process.env, DOCKER_HOST: stdout.trim() } };
  } catch (e) {
    if (e.code === 3) return { skip: String(e.stderr).trim().split('\n').pop() };
    throw new Error(`dockerd.sh start failed: ${e.stderr ?? e.message}`);
  }
}

// Why the image cannot come from podman here, or null (docker builds it
// itself with TERMBRIDGE_DOCKER_BUILD=1).
export async function podmanImageUnavailable() {
  if (DOCKER_BUILD) return null;
  try {
    await run('podman', ['info']);
    return null;
  } catch {
    return 'the agent image comes from podman, which does not work here (or set TERMBRIDGE_DOCKER_BUILD=1)';
  }
}

async function spawnLogged(command, args, options) {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${code}):\n${log.slice(-4000)}`);
  return log;
}

// Puts the agent image `image` into the docker of `env` (see the top of
// this file); reports how long it took with t.diagnostic. `prebuilt`: the
// image already exists in podman, do not build it.
export async function agentImageForDocker(t, image, env, { prebuilt = false } = {}) {
  const started = Date.now();
  if (DOCKER_BUILD) {
    await spawnLogged(DOCKER, ['build', '-f', 'deploy/Containerfile', '-t', image, '.'], { cwd: ROOT, env });
    t.diagnostic(`docker build of ${image} took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return;
  }
  if (!prebuilt) {
    await spawnLogged('podman', ['build', '--pull=never', '-f', 'deploy/Containerfile', '-t', image, '.'],
      { cwd: ROOT });
  }
  const built = Date.now();
  const idOf = () => run(DOCKER, ['image', 'inspect', '-f', '{{.Id}}', image], { env })
    .then(({ stdout }) => stdout.trim(), () => null);
  const previous = await idOf();
  await spawnLogged('bash', ['-o', 'pipefail', '-c', `podman save ${image} | ${DOCKER} load -q`], { env });
  // The image the last run loaded, now untagged, goes (the store is kept).
  if (previous && previous !== await idOf()) await run(DOCKER, ['rmi', previous], { env }).catch(() => {});
  t.diagnostic(`podman build of ${image} took ${((built - started) / 1000).toFixed(1)} s, `
    + `podman save | docker load ${((Date.now() - built) / 1000).toFixed(1)} s`);
}
