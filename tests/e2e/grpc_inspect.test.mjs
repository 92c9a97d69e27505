// The broker inspected the way an SRE does with grpcurl: server reflection
// lists the services, health answers, and the TerminalBroker service (its
// descriptors downloaded through reflection, not from our .proto) refuses a
// missing token and streams a live terminal over the bidi Attach stream.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import grpc from '@grpc/grpc-js';
import { GrpcReflection } from 'grpc-js-reflection-client';
import { Broker, withDeadline } from '../lib/harness.mjs';

const broker = await Broker.start();
after(() => broker.stop());
const address = `127.0.0.1:${broker.port}`;
const insecure = grpc.credentials.createInsecure();
const reflection = new GrpcReflection(address, insecure);
const token = fs.readFileSync(broker.tokenFile, 'utf8').trim();
const auth = new grpc.Metadata();
auth.set('authorization', `Bearer ${token}`);

async function serviceClient(symbol) {
  const descriptor = await reflection.getDescriptorBySymbol(symbol);
  const pkg = descriptor.getPackageObject({ keepCase: true, longs: String, enums: String, defaults: true });
  const Ctor = symbol.split('.').reduce((o, k) => o[k], pkg);
  return new Ctor(address, insecure);
}

const unary = (client, method, request, metadata = new grpc.Metadata()) =>
  new Promise((resolve, reject) => {
    client[method](request, metadata, (err, res) => (err ? reject(err) : resolve(res)));
  });

test('reflection lists the broker, health and reflection services', async () => {
  const services = await reflection.listServices();
  for (const name of ['termbridge.v1.TerminalBroker', 'grpc.health.v1.Health']) {
    assert.ok(services.includes(name), `${name} in ${services}`);
  }
});

test('health reports SERVING', async () => {
  const health = await serviceClient('grpc.health.v1.Health');
  const res = await unary(health, 'Check', { service: '' });
  assert.equal(res.status, 'SERVING');
  health.close();
});

test('a call without the agent token is UNAUTHENTICATED', async () => {
  const broker = await serviceClient('termbridge.v1.TerminalBroker');
  await assert.rejects(unary(broker, 'List', {}), (err) => err.code === grpc.status.UNAUTHENTICATED);
  const wrong = new grpc.Metadata();
  wrong.set('authorization', 'Bearer not-the-token');
  await assert.rejects(unary(broker, 'List', {}, wrong), (err) => err.code === grpc.status.UNAUTHENTICATED);
  broker.close();
});

test('Attach streams live output, takes input and reports the exit', async () => {
  const client = await serviceClient('termbridge.v1.TerminalBroker');
  // The shell exits after cat: an agent's input goes to its running command
  // only, never to the shell's prompt, so the input is written once the
  // command says it runs (its own process group holds the terminal then).
  const started = await unary(client, 'Execute',
    { command: `sh -c 'printf "%s-%s\\n" now reading; exec cat'; exit`, wait_ms: 0 }, auth);
  assert.match(started.terminal_id, /^t_/);
  const stream = client.Attach(auth);
  let output = '';
  let exited = null;
  const done = new Promise((resolve, reject) => {
    stream.on('data', (frame) => {
      if (frame.output) {
        output += Buffer.from(frame.output.data).toString();
        if (output.includes('now-reading') && !stream.sentInput) {
          stream.sentInput = true;
          stream.write({ input: Buffer.from('ping-from-attach\n') });
        }
        // The typed line comes back twice: the terminal's echo and cat's copy.
        if (output.split('ping-from-attach').length > 2 && !stream.sentEof) {
          stream.sentEof = true;
          stream.write({ stdin_close: true });  // ends cat, then the shell exits
        }
      }
      if (frame.exited) exited = frame.exited;
    });
    stream.on('error', reject);
    stream.on('end', resolve);
  });
  stream.write({ resume: { terminal_id: started.terminal_id, offset: '0' } });
  try {
    await withDeadline(done, 30000, () =>
      `the Attach stream did not end within 30 s; exited frame: ${JSON.stringify(exited)}; output so far:\n${output}`);
  } catch (e) {
    stream.cancel();
    throw e;
  }
  assert.match(output, /ping-from-attach/);
  assert.ok(exited, 'an exited frame arrived before the stream ended');
  assert.equal(exited.running, false);
  assert.equal(Number(exited.exit_code), 0);
  client.close();
});

test('Attach to an unknown terminal fails with NOT_FOUND and a typed detail', async () => {
  const client = await serviceClient('termbridge.v1.TerminalBroker');
  const stream = client.Attach(auth);
  const frames = [];
  const err = await withDeadline(new Promise((resolve) => {
    stream.on('data', (frame) => frames.push(frame));
    stream.on('error', resolve);
    stream.write({ resume: { terminal_id: 't_nope', offset: '0' } });
  }), 30000, () => `no error on the Attach stream within 30 s; frames so far: ${JSON.stringify(frames)}`)
    .finally(() => stream.cancel());
  assert.equal(err.code, grpc.status.NOT_FOUND);
  assert.ok(err.metadata.get('termbridge-error-bin').length > 0, 'PM_TERM detail in trailers');
  client.close();
});

test('a health watcher sees NOT_SERVING when the broker drains on SIGTERM', async () => {
  const health = await serviceClient('grpc.health.v1.Health');
  const statuses = [];
  const watch = health.Watch({ service: '' });
  const ended = new Promise((resolve) => {
    watch.on('data', (res) => {
      statuses.push(res.status);
      if (statuses.length === 1) broker.child.kill('SIGTERM');
    });
    watch.on('error', resolve);
    watch.on('end', resolve);
  });
  await withDeadline(ended, 30000,
    () => `the health watch did not end within 30 s; statuses so far: ${statuses}; broker stderr:\n${broker.log}`);
  assert.equal(statuses[0], 'SERVING');
  assert.equal(statuses.at(-1), 'NOT_SERVING');
  await withDeadline(broker.exited, 30000,
    () => `the broker did not exit within 30 s of SIGTERM; its stderr:\n${broker.log}`);
  health.close();
});
