// memory_terminal, the strict headless tool, end to end: the official MCP
// TypeScript SDK drives a real termbridge-agent over stdio and over
// Streamable HTTP; the agent takes its headless policy from a real broker's
// snapshot and runs argv next to itself, without a shell.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Broker, connectAgent, connectHttpAgent, startHttpAgent, textAgrees,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

// The headless lane allows only what the host policy allows outright.
const POLICY = `version = 1
default = "ask"
default_rules = false

[[rule]]
id = "echo"
action = "allow"
prefix = ["echo"]

[[rule]]
id = "sleep"
action = "allow"
prefix = ["sleep"]
`;

let brokerPromise = null;
function sharedBroker() {
  brokerPromise ??= Broker.start({ policy: POLICY }).then((broker) => {
    cleanups.push(() => broker.stop());
    return broker;
  });
  return brokerPromise;
}

const transports = {
  stdio: async (broker) => {
    const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
    cleanups.push(() => agent.client.close());
    return agent.client;
  },
  http: async (broker) => {
    const server = await startHttpAgent(broker);
    cleanups.push(() => server.stop());
    const agent = await connectHttpAgent(server.url, server.requestInit);
    cleanups.push(() => agent.client.close());
    return agent.client;
  },
};

async function headless(client, args) {
  const result = await client.callTool({ name: 'memory_terminal', arguments: args }, undefined,
    { timeout: 60000 });
  const payload = result.structuredContent;
  assert.ok(textAgrees(payload, result.content[0].text),
    `the text content is for a model and agrees with structuredContent: ${result.content[0].text}`);
  return { ...payload, isError: result.isError === true };
}

for (const [name, connect] of Object.entries(transports)) {
  test(`${name}: memory_terminal is listed with its schemas and hints`, async () => {
    const client = await connect(await sharedBroker());
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['memory_terminal', 'memory_terminal_interactive']);
    const tool = tools.find((t) => t.name === 'memory_terminal');
    assert.match(tool.description, /allowlisted/);
    assert.deepEqual(tool.inputSchema.required, ['action']);
    assert.deepEqual(tool.inputSchema.properties.action.enum,
      ['run', 'read_output', 'kill', 'get_allowlist', 'update_allowlist']);
    assert.equal(tool.inputSchema.additionalProperties, false);
    assert.equal(tool.outputSchema.type, 'object');
    assert.equal(tool.annotations.readOnlyHint, false);
    assert.equal(tool.annotations.destructiveHint, false);
  });

  test(`${name}: run executes an allowed argv without a shell`, async () => {
    const client = await connect(await sharedBroker());
    const r = await headless(client, { action: 'run', command: 'echo', args: ['a b', '$HOME', ';', 'x'] });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.success, true);
    assert.equal(r.status, 'completed');
    assert.equal(r.resolved.mode, 'headless');
    // No shell: the words arrive as they were sent.
    assert.equal(r.result.stdout, 'a b $HOME ; x\n');
    assert.equal(r.result.exit_code, 0);
    assert.equal(r.result.lane, 'headless');
    assert.equal(r.result.policy.source, 'broker');
    assert.equal(r.result.policy.rule, 'echo');
    assert.match(r.identity.session_id, /\S/);

    const again = await headless(client, { action: 'read_output', session_id: r.identity.session_id });
    assert.equal(again.result.stdout, 'a b $HOME ; x\n');
  });

  test(`${name}: a long run returns within wait_ms and kill stops it`, async () => {
    const client = await connect(await sharedBroker());
    const r = await headless(client, { action: 'run', command: 'sleep', args: ['60'], wait_ms: 100 });
    assert.equal(r.success, true, JSON.stringify(r.error));
    assert.equal(r.status, 'accepted');
    assert.equal(r.result.running, true);
    const killed = await headless(client, { action: 'kill', session_id: r.identity.session_id });
    assert.equal(killed.success, true, JSON.stringify(killed.error));
    assert.equal(killed.result.running, false);
    assert.ok(killed.result.signal !== null || killed.result.exit_code !== 0);
  });

  test(`${name}: what policy does not allow is refused with the canonical error`, async () => {
    const client = await connect(await sharedBroker());
    const destructive = await headless(client, { action: 'run', command: 'rm', args: ['-rf', '/tmp/nothing'] });
    assert.equal(destructive.isError, true);
    assert.equal(destructive.success, false);
    assert.equal(destructive.error.code, 'PM_TERM_BLOCKED_DESTRUCTIVE');
    assert.equal(destructive.fallback.strategy, 'reject_with_safety_hint');
    const unlisted = await headless(client, { action: 'run', command: 'ls' });
    assert.equal(unlisted.error.code, 'PM_TERM_BLOCKED_DESTRUCTIVE');

    const missing = await headless(client, { action: 'read_output', session_id: 'h_nope' });
    assert.equal(missing.error.code, 'PM_TERM_NOT_FOUND');
  });

  test(`${name}: get_allowlist shows the broker's rules; update_allowlist only proposes`, async () => {
    const client = await connect(await sharedBroker());
    const list = await headless(client, { action: 'get_allowlist' });
    assert.equal(list.success, true, JSON.stringify(list.error));
    assert.equal(list.result.source, 'broker');
    assert.equal(list.result.read_only, true);
    assert.deepEqual(list.result.allow.map((r) => r.id).sort(), ['echo', 'sleep']);

    const proposed = await headless(client,
      { action: 'update_allowlist', rule: ['make', 'test'], reason: 'run the tests', wait_ms: 0 });
    assert.equal(proposed.success, true, JSON.stringify(proposed.error));
    assert.deepEqual(proposed.result.proposed, ['make', 'test']);
    assert.equal(proposed.result.approval.state, 'pending');
    // The policy is unchanged until a person decides.
    const still = await headless(client, { action: 'get_allowlist' });
    assert.deepEqual(still.result.allow.map((r) => r.id).sort(), ['echo', 'sleep']);
    // A person reads every proposal: a reason longer than a screen is refused.
    const essay = await headless(client,
      { action: 'update_allowlist', rule: ['make'], reason: 'x'.repeat(5000), wait_ms: 0 });
    assert.equal(essay.error?.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(essay));
    assert.equal(essay.error.details.field, 'reason');
  });

  test(`${name}: invalid arguments are isError results naming the field`, async () => {
    const client = await connect(await sharedBroker());
    const badType = await client.callTool({ name: 'memory_terminal', arguments: { action: 'run', args: 'x' } });
    assert.equal(badType.isError, true);
    assert.equal(badType.structuredContent.error.field, 'args');
    assert.match(badType.content[0].text, /args/);
    const extra = await client.callTool({ name: 'memory_terminal', arguments: { action: 'run', comand: 'echo' } });
    assert.equal(extra.isError, true);
    assert.equal(extra.structuredContent.error.field, 'comand');
    const badAction = await client.callTool({ name: 'memory_terminal', arguments: { action: 'explode' } });
    assert.equal(badAction.structuredContent.error.field, 'action');
    const noRule = await headless(client, { action: 'update_allowlist' });
    assert.equal(noRule.error.code, 'PM_TERM_INVALID_PAYLOAD');
    assert.equal(noRule.error.details.field, 'rule');
  });

  test(`${name}: an unknown tool is a JSON-RPC error`, async () => {
    const client = await connect(await sharedBroker());
    await assert.rejects(client.callTool({ name: 'memory_terminal_vscode', arguments: {} }),
      (error) => error.code === -32602 && /Unknown tool/.test(error.message));
  });
}
