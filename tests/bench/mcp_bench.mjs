// MCP end-to-end latency: an MCP client (the official TypeScript SDK, over
// stdio) calls memory_terminal_interactive execute `echo hi` through
// termbridge-agent and termbridge-broker, against the bare baseline measured
// in the same run by termbridge-bench: forkpty + exec of `/bin/sh -c true`,
// read to EOF. Prints p50 and p99 of both and their ratios. Not part of the
// test suite; run it by hand on a quiet machine:
//
//   cmake --build build && node tests/bench/mcp_bench.mjs [--iterations 200] [--warmup 10] [--json]
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD = path.resolve(ROOT, process.env.TERMBRIDGE_BUILD_DIR || 'build');
process.env.TERMBRIDGE_BROKER_BIN ??= path.join(BUILD, 'broker/termbridge-broker');
process.env.TERMBRIDGE_AGENT_BIN ??= path.join(BUILD, 'agent/termbridge-agent');
process.env.TERMBRIDGE_CLI_BIN ??= path.join(BUILD, 'broker/cli/termbridge');
process.env.TERMBRIDGE_ALLOW_IN_CONTAINER ??= 'true';  // a benchmark rig, wherever it runs
const BENCH_BIN = path.join(BUILD, 'tests/bench/termbridge-bench');

const { Broker, connectAgent, terminal } = await import('../lib/harness.mjs');

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
const iterations = option('--iterations', 200);
const warmup = option('--warmup', 10);
const json = process.argv.includes('--json');

function percentiles(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50_ms: at(0.5), p99_ms: at(0.99), min_ms: sorted[0], max_ms: sorted.at(-1), samples: sorted.length };
}

async function measureMcp() {
  // The data path alone: every command allowed (still parsed and checked),
  // no person to wait for.
  const broker = await Broker.start({ viewer: 'none' });
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  try {
    const samples = [];
    for (let i = 0; i < warmup + iterations; i++) {
      const start = performance.now();
      const r = await terminal(agent.client, { action: 'execute', execution: { command: 'echo hi' } });
      const ms = performance.now() - start;
      if (!r.success || r.result.stdout !== 'hi\n') {
        throw new Error(`execute echo hi failed: ${JSON.stringify(r.error ?? r.result)}`);
      }
      if (i >= warmup) samples.push(ms);
    }
    return percentiles(samples);
  } finally {
    await agent.client.close();
    await broker.stop();
  }
}

function measureBare() {
  const out = execFileSync(BENCH_BIN, ['--skip-throughput', '--iterations', String(iterations),
    '--warmup', String(warmup), '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const latency = JSON.parse(out).latency;
  return { bare: latency.bare_bin_sh_c_true, grpc_execute: latency.broker_execute_true };
}

const mcp = await measureMcp();
const { bare, grpc_execute: grpcExecute } = measureBare();
const result = {
  iterations,
  mcp_execute_echo_hi: mcp,
  bare_forkpty_sh_c_true: { p50_ms: bare.p50_ms, p99_ms: bare.p99_ms },
  grpc_execute_true: { p50_ms: grpcExecute.p50_ms, p99_ms: grpcExecute.p99_ms },
  ratio_p50: mcp.p50_ms / bare.p50_ms,
  ratio_p99: mcp.p99_ms / bare.p99_ms,
};
if (json) {
  console.log(JSON.stringify(result, null, 2));
} else {
  const f = (x) => x.toFixed(2).padStart(8);
  console.log(`MCP execute \`echo hi\` (SDK -> agent -> broker), ${iterations} iterations after ${warmup} warm-up`);
  console.log(`                              p50 ms   p99 ms`);
  console.log(`  bare forkpty sh -c true   ${f(bare.p50_ms)} ${f(bare.p99_ms)}   x1.00`);
  console.log(`  gRPC Execute true         ${f(grpcExecute.p50_ms)} ${f(grpcExecute.p99_ms)}`);
  console.log(`  MCP execute echo hi       ${f(mcp.p50_ms)} ${f(mcp.p99_ms)}   p50 x${result.ratio_p50.toFixed(2)}, p99 x${result.ratio_p99.toFixed(2)}`);
}
