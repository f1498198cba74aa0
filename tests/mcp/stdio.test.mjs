// MCP client tests for `nsbox serve` over stdio, driven by the official
// TypeScript SDK (@modelcontextprotocol/sdk: Client + StdioClientTransport).
// Prints exactly one line per test:  PASS: SUITE/name  or  FAIL: SUITE/name: why
// (plus "# ..." notes), like tests/lib.sh.  Exits 1 when any test failed.
//
// Environment: NSBOX (the binary), NSBOX_STORE (a store that already holds
// the python and busybox fixture images), SUITE (default mcp_stdio).
// Run through tests/integration/mcp_stdio.sh, which prepares all of that.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { execFileSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as nt from '../lib/nsbox_test.mjs';
import { Check, fail, harness, note, ok, reporter } from '../lib/nsbox_test.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NSBOX = process.env.NSBOX || path.join(HERE, '../../build/nsbox');
const STORE = process.env.NSBOX_STORE;
nt.configure({ defaultSuite: 'mcp_stdio' });
const MiB = 1 << 20;

const j = v => {
	const s = JSON.stringify(v);
	return s === undefined ? String(v) : s.length > 300 ? s.slice(0, 300) + '...' : s;
};
function errText(e) {
	if (e && typeof e === 'object' && 'code' in e && e.constructor?.name === 'McpError')
		return `JSON-RPC error ${e.code}: ${e.message}`;
	return e instanceof Error ? e.message : String(e);
}

// Runs one test with a deadline; any exception is its FAIL reason.
const test = (name, fn, timeoutMs = 60000) => nt.test(name, fn, { seconds: timeoutMs / 1000, throws: true, why: errText });

// A transport wrapper that records every message in both directions, so the
// tests can look at the raw JSON-RPC traffic the SDK hides.
class Tap {
	constructor(inner) {
		this.inner = inner;
		this.received = [];
		this.sent = [];
		inner.onmessage = (m, extra) => {
			this.received.push(m);
			this.onmessage?.(m, extra);
		};
		inner.onclose = () => this.onclose?.();
		inner.onerror = e => this.onerror?.(e);
	}
	start() {
		return this.inner.start();
	}
	send(m, opts) {
		this.sent.push(m);
		return this.inner.send(m, opts);
	}
	close() {
		return this.inner.close();
	}
	get pid() {
		return this.inner.pid;
	}
}

async function connect(label) {
	const stdio = new StdioClientTransport({
		command: NSBOX,
		args: ['--store', STORE, 'serve'],
		stderr: 'pipe',
	});
	const stderr = [];
	stdio.stderr?.on('data', d => {
		stderr.push(String(d));
		if (stderr.length > 200) stderr.splice(0, 100);
	});
	const tap = new Tap(stdio);
	const client = new Client({ name: `nsbox-tests-${label}`, version: '1.0.0' }, { capabilities: {} });
	const errors = [];
	client.onerror = e => errors.push(e);
	try {
		await client.connect(tap, { timeout: 20000 });
	} catch (e) {
		const tail = stderr.join('').trim().split('\n').slice(-2).join(' | ');
		await stdio.close().catch(() => {});
		throw new Error(`cannot connect to "${NSBOX} --store ${STORE} serve": ${errText(e)}${tail ? ` (stderr: ${tail})` : ''}`);
	}
	return { client, tap, stdio, stderr, errors };
}

// The result of a tools/call that must be a successful tool result.
async function call(client, name, args, opts = {}) {
	let res;
	try {
		res = await client.callTool({ name, arguments: args }, undefined, { timeout: 50000, ...opts });
	} catch (e) {
		throw new Check(`tools/call ${name} ${j(args)} -> ${errText(e)}`);
	}
	return res;
}
async function callOk(client, name, args, opts) {
	const res = await call(client, name, args, opts);
	ok(!res.isError, () => `tools/call ${name} ${j(args)} -> isError: ${j(res.content)}`);
	ok(res.structuredContent && typeof res.structuredContent === 'object', () => `tools/call ${name}: no structuredContent: ${j(res)}`);
	return res;
}
async function callIsError(client, name, args) {
	let res;
	try {
		res = await client.callTool({ name, arguments: args }, undefined, { timeout: 50000 });
	} catch (e) {
		throw new Check(`tools/call ${name} ${j(args)}: expected a result with isError true, got ${errText(e)}`);
	}
	ok(res.isError === true, () => `tools/call ${name} ${j(args)}: expected isError true, got ${j(res)}`);
	ok(Array.isArray(res.content) && res.content.length > 0 && res.content[0].type === 'text' && res.content[0].text,
		() => `tools/call ${name}: isError result without a text explanation: ${j(res)}`);
	return res;
}

const RECORD_TYPES = {
	status: 'string', exit_code: 'number', stdout: 'string', stderr: 'string',
	stdout_truncated: 'boolean', stderr_truncated: 'boolean', timed_out: 'boolean', oom_killed: 'boolean',
	wall_ms: 'number', cpu_ms: 'number', memory_peak_bytes: 'number',
	disk: 'string', disk_used_bytes: 'number',
};
// A run's result record: structuredContent, with content[0] the same as JSON text.
async function run(client, tool, args, opts) {
	const res = await callOk(client, tool, args, opts);
	const r = res.structuredContent;
	for (const [k, t] of Object.entries(RECORD_TYPES))
		ok(typeof r[k] === t, () => `${tool}: result record field ${k} should be a ${t}: ${j(r)}`);
	ok('signal' in r, () => `${tool}: result record has no signal field: ${j(r)}`);
	// The writable layer's bound: a number, or null with disk "none".
	ok(r.disk_limit_bytes === null ? r.disk === 'none' : typeof r.disk_limit_bytes === 'number' && r.disk !== 'none',
		() => `${tool}: disk_limit_bytes ${j(r.disk_limit_bytes)} with disk ${j(r.disk)}`);
	ok(Array.isArray(r.files), () => `${tool}: result record field files should be an array: ${j(r)}`);
	ok(['ok', 'error', 'timeout', 'oom', 'signaled'].includes(r.status), () => `${tool}: unknown status ${j(r.status)}`);
	const c0 = res.content?.[0];
	ok(c0 && c0.type === 'text', () => `${tool}: content[0] is not text: ${j(res.content)}`);
	let parsed;
	try {
		parsed = JSON.parse(c0.text);
	} catch {
		throw new Check(`${tool}: content[0].text is not JSON: ${j(c0.text)}`);
	}
	ok(isDeepStrictEqual(parsed, r), () => `${tool}: content[0].text differs from structuredContent: ${j(parsed)} vs ${j(r)}`);
	return r;
}
const py = (client, code, extra = {}) => run(client, 'execute_code', { code, language: 'python', ...extra });
const sh = (client, command, extra = {}) => run(client, 'run_command', { command, ...extra });

// Pids whose whole command line matches pattern (tests/markers.md:
// mcp_stdio's markers are sleep 3130-3139).
function pgrep(pattern) {
	try {
		return execFileSync('pgrep', ['-f', `^${pattern}$`], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
	} catch {
		return [];
	}
}
async function waitFor(pred, ms, step = 100) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await pred();
		if (v) return v;
		if (Date.now() > end) return v;
		await sleep(step);
	}
}
function pidAlive(pid) {
	try {
		process.kill(pid, 0);
		return true;
	} catch {
		return false;
	}
}

const TOOLS = {
	sandbox_create: ['image', 'language', 'memory_mb', 'cpus', 'pids', 'timeout_s', 'env', 'workdir'],
	sandbox_list: [],
	sandbox_stop: ['sandbox_id'],
	execute_code: ['code', 'language', 'sandbox_id', 'timeout_s', 'stdin'],
	run_command: ['command', 'sandbox_id', 'timeout_s', 'stdin', 'workdir'],
	list_languages: [],
	list_images: [],
};
const REQUIRED = { sandbox_stop: ['sandbox_id'], execute_code: ['code'], run_command: ['command'] };

const TESTS = [
	'initialize', 'ping', 'logging_set_level', 'tools_list', 'execute_code_stdout', 'stderr_kept_apart',
	'nonzero_exit_is_status_error', 'stdin', 'timeout', 'run_command_one_shot', 'one_shot_leaves_nothing',
	'sandbox_create', 'persistent_sandbox', 'sandbox_list', 'sandbox_stop', 'create_env_workdir',
	'create_by_image_name', 'unknown_sandbox_is_error', 'stop_unknown_is_error', 'unknown_language_is_error',
	'output_truncated', 'jsonrpc_lookalike_output', 'list_languages', 'list_images', 'progress',
	'cancellation_kills', 'list_is_per_session', 'other_session_sandbox_refused', 'no_stray_messages',
	'sandboxes_die_with_server', 'tool_annotations',
];

// Issue #11: the hints clients confirm by.  Read-only tools say so; the
// ones that delete or overwrite are destructive; none reaches the network.
const READ_ONLY = ['read_file', 'list_directory', 'project_structure', 'sandbox_list', 'list_languages', 'list_images', 'list_secrets', 'context_list', 'port_list',
	'process_list', 'process_logs', 'process_wait', 'checkpoint_list'];
// Restarting or removing a code context loses its interpreter's state.
const DESTRUCTIVE = ['delete_path', 'sandbox_stop', 'write_file', 'context_restart', 'context_remove', 'port_close', 'process_signal', 'checkpoint_delete'];
// Package installs reach a registry (serve --install, default all): open world.
const OPEN_WORLD = ['install_packages', 'sandbox_create'];

async function main() {
	if (!STORE) {
		fail('setup', 'NSBOX_STORE is not set (run through tests/integration/mcp_stdio.sh)');
		process.exit(1);
	}
	for (const m of ['3131', '3132', '3133']) {
		if (pgrep(`sleep ${m}`).length) {
			fail('setup', `a "sleep ${m}" process already runs on this host; the process checks would be meaningless`);
			process.exit(1);
		}
	}

	let A;
	try {
		A = await connect('a');
	} catch (e) {
		for (const t of TESTS) fail(t, errText(e));
		process.exit(1);
	}
	const { client, tap } = A;
	let tools = [];
	const cancelledIds = [];
	const langs = {};

	await test('initialize', async () => {
		const init = tap.received.find(m => m.id === tap.sent[0]?.id && 'result' in m);
		ok(init, 'no initialize result recorded');
		ok(init.result.protocolVersion === LATEST_PROTOCOL_VERSION,
			`asked for ${LATEST_PROTOCOL_VERSION}, got protocolVersion ${j(init.result.protocolVersion)}`);
		const info = client.getServerVersion();
		ok(info?.name === 'nsbox', `serverInfo.name should be "nsbox": ${j(info)}`);
		ok(typeof info.version === 'string' && info.version, `serverInfo.version missing: ${j(info)}`);
		const caps = client.getServerCapabilities();
		ok(caps?.tools && typeof caps.tools === 'object', `capabilities.tools missing: ${j(caps)}`);
		ok(caps?.logging && typeof caps.logging === 'object', `capabilities.logging missing: ${j(caps)}`);
	});

	await test('ping', async () => {
		const r = await client.ping();
		ok(r && typeof r === 'object' && Object.keys(r).length === 0, `ping result should be {}: ${j(r)}`);
	});

	await test('logging_set_level', async () => {
		await client.setLoggingLevel('info');
		await client.setLoggingLevel('warning');
	});

	await test('tool_annotations', async () => {
		const r = await client.listTools(); // the SDK validates ToolAnnotations
		for (const t of r.tools) {
			const a = t.annotations || {};
			ok(a.openWorldHint === OPEN_WORLD.includes(t.name), `${t.name}: openWorldHint ${j(a.openWorldHint)}`);
			ok(a.readOnlyHint === READ_ONLY.includes(t.name), `${t.name}: readOnlyHint ${j(a.readOnlyHint)}`);
			if (!READ_ONLY.includes(t.name))
				ok(a.destructiveHint === DESTRUCTIVE.includes(t.name) || t.name === 'copy_in' || t.name === 'copy_out',
					`${t.name}: destructiveHint ${j(a.destructiveHint)}`);
		}
		const by = Object.fromEntries(r.tools.map(t => [t.name, t.annotations || {}]));
		ok(by.delete_path.idempotentHint === true && by.execute_code.idempotentHint === false,
			`idempotentHint: delete_path ${j(by.delete_path.idempotentHint)}, execute_code ${j(by.execute_code.idempotentHint)}`);
	});

	await test('tools_list', async () => {
		const r = await client.listTools();
		tools = r.tools;
		const names = tools.map(t => t.name);
		const missingTools = Object.keys(TOOLS).filter(n => !names.includes(n));
		ok(missingTools.length === 0, `tools/list lacks ${j(missingTools)} (has ${j(names)})`);
		ok(new Set(names).size === names.length, `tool names repeat: ${j(names)}`);
		const extraTools = names.filter(n => !(n in TOOLS));
		if (extraTools.length) note(`tools_list: tools beyond the contract's seven: ${extraTools.join(', ')}`);
		for (const t of tools) {
			ok(typeof t.title === 'string' && t.title, `${t.name}: no title`);
			ok(typeof t.description === 'string' && t.description, `${t.name}: no description`);
			const is = t.inputSchema;
			ok(is?.type === 'object', `${t.name}: inputSchema.type is ${j(is?.type)}`);
			ok(is.additionalProperties === false, `${t.name}: inputSchema.additionalProperties is ${j(is.additionalProperties)}, want false`);
			ok(is.properties && typeof is.properties === 'object', `${t.name}: inputSchema has no properties object`);
			if (!(t.name in TOOLS)) continue;
			const props = Object.keys(is.properties || {});
			const missing = TOOLS[t.name].filter(p => !props.includes(p));
			ok(missing.length === 0, `${t.name}: inputSchema lacks the contract's properties ${j(missing)} (has ${j(props)})`);
			const extra = props.filter(p => !TOOLS[t.name].includes(p));
			if (extra.length) note(`tools_list: ${t.name} takes more than the contract lists: ${extra.join(', ')}`);
			for (const req of REQUIRED[t.name] || [])
				ok((is.required || []).includes(req), `${t.name}: "${req}" is not required: ${j(is.required)}`);
			ok(t.outputSchema?.type === 'object', `${t.name}: outputSchema missing or not an object schema: ${j(t.outputSchema)}`);
		}
	});

	await test('execute_code_stdout', async () => {
		const r = await py(client, 'print("hello from python")');
		ok(r.status === 'ok' && r.exit_code === 0, `status ${r.status}, exit_code ${r.exit_code}: ${j(r)}`);
		ok(r.stdout === 'hello from python\n', `stdout ${j(r.stdout)}`);
		ok(r.stderr === '', `stderr ${j(r.stderr)}`);
		ok(!r.stdout_truncated && !r.timed_out && !r.oom_killed, `flags: ${j(r)}`);
	});

	await test('stderr_kept_apart', async () => {
		const r = await py(client, 'import sys\nprint("to-out")\nprint("to-err", file=sys.stderr)');
		ok(r.stdout === 'to-out\n' && r.stderr === 'to-err\n', `stdout ${j(r.stdout)} stderr ${j(r.stderr)}`);
	});

	await test('nonzero_exit_is_status_error', async () => {
		const r = await py(client, 'import sys\nprint("before")\nsys.exit(3)');
		ok(r.status === 'error' && r.exit_code === 3, `status ${r.status} exit_code ${r.exit_code}`);
		ok(r.stdout === 'before\n', `stdout ${j(r.stdout)}`);
		const r2 = await py(client, 'raise ValueError("boom")');
		ok(r2.status === 'error' && r2.exit_code === 1 && r2.stderr.includes('ValueError: boom'),
			`uncaught exception: status ${r2.status} exit_code ${r2.exit_code} stderr ${j(r2.stderr)}`);
	});

	await test('stdin', async () => {
		const r = await py(client, 'import sys\nprint(sys.stdin.read().upper(), end="")', { stdin: 'abc\ndef\n' });
		ok(r.stdout === 'ABC\nDEF\n', `stdout ${j(r.stdout)}`);
		const r2 = await sh(client, 'cat; echo end', { stdin: 'via sh\n' });
		ok(r2.stdout === 'via sh\nend\n', `run_command stdin: stdout ${j(r2.stdout)}`);
	});

	await test('timeout', async () => {
		const t0 = Date.now();
		const r = await py(client, 'import time\nprint("started", flush=True)\ntime.sleep(30)', { timeout_s: 2 });
		const dt = (Date.now() - t0) / 1000;
		ok(r.status === 'timeout' && r.timed_out === true, `status ${r.status} timed_out ${r.timed_out}`);
		ok(dt < 8, `the call took ${dt.toFixed(1)} s for timeout_s 2`);
		ok(dt >= 1.5, `the call returned after ${dt.toFixed(1)} s, before timeout_s 2`);
		ok(r.stdout === 'started\n', `output before the timeout should be kept: stdout ${j(r.stdout)}`);
	});

	await test('run_command_one_shot', async () => {
		const r = await sh(client, 'echo out; echo err >&2; exit 4');
		ok(r.status === 'error' && r.exit_code === 4, `status ${r.status} exit_code ${r.exit_code}`);
		ok(r.stdout === 'out\n' && r.stderr === 'err\n', `stdout ${j(r.stdout)} stderr ${j(r.stderr)}`);
		// Without a sandbox, run_command uses the "sh" language image (busybox).
		const r2 = await sh(client, 'if [ -x /bin/busybox ] && ! [ -e /usr/bin/python3 ]; then echo busybox-image; else echo other-image; fi');
		ok(r2.stdout === 'busybox-image\n', `one-shot run_command did not run in the sh (busybox) image: ${j(r2.stdout)}`);
	});

	await test('one_shot_leaves_nothing', async () => {
		const w = await sh(client, 'echo left-behind > /workspace/oneshot.txt && cat /workspace/oneshot.txt');
		ok(w.status === 'ok' && w.stdout === 'left-behind\n', `writing /workspace in a one-shot run: ${j(w)}`);
		const r = await sh(client, 'cat /workspace/oneshot.txt');
		ok(r.status === 'error' && r.stdout === '', `a second one-shot run sees the first one's file: ${j(r)}`);
		const before = await callOk(client, 'sandbox_list', {});
		ok(Array.isArray(before.structuredContent.sandboxes) && before.structuredContent.sandboxes.length === 0,
			`one-shot runs left sandboxes in sandbox_list: ${j(before.structuredContent)}`);
	});

	let sbx = null;
	await test('sandbox_create', async () => {
		const res = await callOk(client, 'sandbox_create', { language: 'python', memory_mb: 256, cpus: 1, pids: 64, timeout_s: 30 });
		const s = res.structuredContent;
		ok(/^[0-9a-f]{32}$/.test(s.sandbox_id), `sandbox_id ${j(s.sandbox_id)} is not 32 hex digits`);
		ok(typeof s.image === 'string' && s.image, `image ${j(s.image)}`);
		ok(/^sha256:[0-9a-f]{64}$/.test(s.digest), `digest ${j(s.digest)}`);
		const l = s.limits || {};
		ok(l.memory_mb === 256 && l.cpus === 1 && l.pids === 64 && l.timeout_s === 30, `limits not as asked: ${j(l)}`);
		ok(typeof l.enforced === 'string' && /cgroup v1/.test(l.enforced), `limits.enforced ${j(l.enforced)} (want "cgroup v1: ...")`);
		ok(res.content?.[0]?.type === 'text', `content[0] is not text: ${j(res.content)}`);
		sbx = s;
	});

	await test('persistent_sandbox', async () => {
		ok(sbx, 'no sandbox (sandbox_create failed)');
		const w = await sh(client, 'echo "kept $((6*7))" > /workspace/state.txt', { sandbox_id: sbx.sandbox_id });
		ok(w.status === 'ok', `run_command writing /workspace/state.txt: ${j(w)}`);
		const r = await py(client, 'print(open("/workspace/state.txt").read(), end="")', { sandbox_id: sbx.sandbox_id });
		ok(r.status === 'ok' && r.stdout === 'kept 42\n', `execute_code reading it back: ${j(r)}`);
		const r2 = await sh(client, 'pwd', { sandbox_id: sbx.sandbox_id, workdir: '/workspace' });
		ok(r2.stdout === '/workspace\n', `run_command workdir: pwd says ${j(r2.stdout)}`);
	});

	await test('sandbox_list', async () => {
		ok(sbx, 'no sandbox (sandbox_create failed)');
		const { structuredContent: l } = await callOk(client, 'sandbox_list', {});
		ok(Array.isArray(l.sandboxes), `sandboxes is not an array: ${j(l)}`);
		const e = l.sandboxes.find(s => s.sandbox_id === sbx.sandbox_id);
		ok(e, `sandbox ${sbx.sandbox_id} not listed: ${j(l)}`);
		ok(e.image === sbx.image && e.digest === sbx.digest && e.created !== undefined && e.created !== null,
			`entry ${j(e)} vs created ${j(sbx)}`);
		ok(l.sandboxes.length === 1, `expected exactly this session's one sandbox: ${j(l)}`);
	});

	await test('sandbox_stop', async () => {
		ok(sbx, 'no sandbox (sandbox_create failed)');
		const { structuredContent: s } = await callOk(client, 'sandbox_stop', { sandbox_id: sbx.sandbox_id });
		ok(s.sandbox_id === sbx.sandbox_id && s.stopped === true, `stop result ${j(s)}`);
		const { structuredContent: l } = await callOk(client, 'sandbox_list', {});
		ok(!l.sandboxes.some(x => x.sandbox_id === sbx.sandbox_id), `stopped sandbox still listed: ${j(l)}`);
		await callIsError(client, 'execute_code', { code: 'print(1)', sandbox_id: sbx.sandbox_id });
	});

	await test('create_env_workdir', async () => {
		const { structuredContent: s } = await callOk(client, 'sandbox_create', {
			language: 'sh', env: { GREETING: 'hi there', OTHER: 'x=y' }, workdir: '/tmp',
		});
		try {
			const r = await sh(client, 'echo "$GREETING|$OTHER|$(pwd)"', { sandbox_id: s.sandbox_id });
			ok(r.stdout === 'hi there|x=y|/tmp\n', `env/workdir inside: ${j(r.stdout)}`);
			const r2 = await sh(client, 'test -x /bin/busybox && echo bb', { sandbox_id: s.sandbox_id });
			ok(r2.stdout === 'bb\n', `language sh should give the busybox image: ${j(r2)}`);
		} finally {
			await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: s.sandbox_id } }).catch(() => {});
		}
	});

	await test('create_by_image_name', async () => {
		const { structuredContent: s } = await callOk(client, 'sandbox_create', { image: 'busybox' });
		try {
			const { structuredContent: imgs } = await callOk(client, 'list_images', {});
			const bb = imgs.images.find(i => (i.names || []).some(n => /busybox/.test(n)));
			ok(bb && s.digest === bb.digest, `sandbox digest ${s.digest} is not busybox's (${j(bb)})`);
			const r = await sh(client, 'busybox true && echo yes', { sandbox_id: s.sandbox_id });
			ok(r.stdout === 'yes\n', `${j(r)}`);
		} finally {
			await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: s.sandbox_id } }).catch(() => {});
		}
	});

	await test('unknown_sandbox_is_error', async () => {
		await callIsError(client, 'execute_code', { code: 'print(1)', sandbox_id: '0123456789abcdef0123456789abcdef' });
		await callIsError(client, 'run_command', { command: 'true', sandbox_id: 'not-a-sandbox' });
		await callIsError(client, 'run_command', { command: 'true', sandbox_id: '../../../../etc' });
	});

	await test('stop_unknown_is_error', async () => {
		await callIsError(client, 'sandbox_stop', { sandbox_id: 'ffffffffffffffffffffffffffffffff' });
	});

	await test('unknown_language_is_error', async () => {
		await callIsError(client, 'execute_code', { code: 'DISPLAY "HI".', language: 'cobol' });
		await callIsError(client, 'sandbox_create', { language: 'cobol' });
	});

	// The runtime keeps 1 MiB of each stream; of that, max_inline_kb (here
	// its ceiling, 1024) comes back inline, the middle cut with a marker
	// (a one-shot run: the whole is not kept).
	await test('output_truncated', async () => {
		const r = await py(client, 'import sys\nsys.stdout.write("x" * (3 << 20))\nsys.stdout.flush()\nprint("done", file=sys.stderr)', { max_inline_kb: 1024 });
		const n = Buffer.byteLength(r.stdout);
		ok(r.stdout_truncated === true, `stdout_truncated ${r.stdout_truncated} (stdout ${n} bytes)`);
		ok(r.stdout_bytes === MiB, `stdout_bytes ${r.stdout_bytes}, want the runtime's cap ${MiB}`);
		const xs = r.stdout.replace(/\n\[nsbox: [^\]\n]*not kept[^\]\n]*\]\n/, '');
		ok(xs.length === MiB - 'done\n'.length && /^x+$/.test(xs), 'stdout is not the x-es written (and one marker)');
		ok(r.stderr_truncated === false, `stderr_truncated ${r.stderr_truncated}`);
		note(`output_truncated: status ${r.status}, stdout ${n} bytes, stderr ${j(r.stderr)}`);
	}, 90000);

	await test('jsonrpc_lookalike_output', async () => {
		// The SDK numbers requests 0, 1, 2...: the next call gets id N, the one after N+1.
		const N = client._requestMessageId;
		ok(Number.isInteger(N), 'cannot see the SDK client\'s next request id');
		const fakes = [
			{ jsonrpc: '2.0', id: 1, result: {} },
			{ jsonrpc: '2.0', id: N, result: {} },
			{ jsonrpc: '2.0', id: N + 1, result: { tools: [] } },
			{ jsonrpc: '2.0', id: N + 2, error: { code: -32603, message: 'fake' } },
			{ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'error', data: 'fake' } },
		];
		const text = fakes.map(f => JSON.stringify(f)).join('\n') + '\n';
		const before = tap.received.length;
		const r = await py(client, `import sys\nsys.stdout.write(${JSON.stringify(text)})\nsys.stderr.write(${JSON.stringify(text)})`);
		ok(r.stdout === text, `stdout ${j(r.stdout)}, want the JSON-RPC lookalike lines verbatim`);
		ok(r.stderr === text, `stderr ${j(r.stderr)}, want the JSON-RPC lookalike lines verbatim`);
		const t = await client.listTools(); // id N+1: a leaked fake would answer it with tools: []
		ok(t.tools.length > 0 && (!tools.length || t.tools.length === tools.length),
			`tools/list after the lookalike output got ${t.tools.length} tools (before: ${tools.length})`);
		await client.ping(); // id N+2
		const leaked = tap.received.slice(before).filter(m => fakes.some(f => isDeepStrictEqual(f, m)));
		ok(leaked.length === 0, `the sandbox's output reached the client as JSON-RPC messages: ${j(leaked)}`);
	});

	await test('list_languages', async () => {
		const { structuredContent: l } = await callOk(client, 'list_languages', {});
		ok(Array.isArray(l.languages), `languages is not an array: ${j(l)}`);
		for (const e of l.languages) langs[e.language] = e;
		for (const want of ['python', 'sh']) {
			const e = langs[want];
			ok(e, `language ${want} missing: ${j(l)}`);
			ok(typeof e.image === 'string' && e.image && /^sha256:[0-9a-f]{64}$/.test(e.digest), `entry ${j(e)}`);
		}
	});

	await test('list_images', async () => {
		const { structuredContent: l } = await callOk(client, 'list_images', {});
		ok(Array.isArray(l.images) && l.images.length >= 2, `images: ${j(l)}`);
		const langsOf = i => (Array.isArray(i.languages) ? i.languages : String(i.languages || '').split(/[\s,]+/).filter(Boolean));
		for (const i of l.images) {
			ok(Array.isArray(i.names) && i.names.every(n => typeof n === 'string'), `names: ${j(i)}`);
			ok(/^sha256:[0-9a-f]{64}$/.test(i.digest) && typeof i.size === 'number' && i.size > 0, `digest/size: ${j(i)}`);
			ok(Array.isArray(i.languages) ? i.languages.every(x => typeof x === 'string') : typeof i.languages === 'string',
				`languages should be strings: ${j(i)}`);
		}
		if (l.images.some(i => !Array.isArray(i.languages))) note(`list_images: languages is a string, not an array: ${j(l.images[0].languages)}`);
		for (const want of ['python', 'sh']) {
			const i = l.images.find(x => langsOf(x).includes(want));
			ok(i, `no image with language ${want}: ${j(l)}`);
			if (langs[want]) ok(i.digest === langs[want].digest, `list_images and list_languages disagree on ${want}: ${i.digest} vs ${langs[want].digest}`);
		}
	});

	await test('progress', async () => {
		const seen = [];
		const before = tap.sent.length;
		// 3 s: progress comes once a second (mcp/tools/exec.c), so at least one
		// notification is due however slowly the sandbox starts.
		const r = await run(client, 'execute_code', { code: 'import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(1)' },
			{ onprogress: p => seen.push(p) });
		ok(r.status === 'ok' && r.stdout === '0\n1\n2\n', `result ${j(r)}`);
		const req = tap.sent.slice(before).find(m => m.method === 'tools/call');
		const token = req?.params?._meta?.progressToken;
		ok(typeof token === 'number', `the SDK sent no numeric progressToken: ${j(req)}`);
		const progress = tap.received.filter(m => m.method === 'notifications/progress' && m.params?.progressToken !== undefined);
		const mine = progress.filter(m => m.params.progressToken === token);
		const bad = progress.filter(m => m.params.progressToken !== token && String(m.params.progressToken) === String(token));
		ok(bad.length === 0, `progressToken echoed with another JSON type: sent ${j(token)}, got ${j(bad[0])}`);
		ok(progress.length === mine.length, `progress for unknown tokens: ${j(progress.filter(m => m.params.progressToken !== token))}`);
		// At least one notification with the call's token (none is a failure).
		ok(mine.length >= 1, `no notifications/progress with the call's token ${j(token)} (got ${progress.length} in all)`);
		for (const m of mine) ok(typeof m.params.progress === 'number', `progress without a number: ${j(m)}`);
		note(`progress: ${mine.length} notifications/progress for one execute_code`);
	});

	await test('cancellation_kills', async () => {
		const { structuredContent: s } = await callOk(client, 'sandbox_create', { language: 'python' });
		try {
			const ac = new AbortController();
			const before = tap.sent.length;
			const p = client.callTool({ name: 'run_command', arguments: { command: 'sleep 3132; echo not-cancelled', sandbox_id: s.sandbox_id } },
				undefined, { signal: ac.signal, timeout: 60000 }).then(v => ({ v }), e => ({ e }));
			const started = await waitFor(() => pgrep('sleep 3132').length > 0, 15000);
			ok(started, 'the "sleep 3132" never showed up on the host');
			ac.abort('test cancels');
			const out = await p;
			ok(out.e, 'the SDK did not reject the cancelled call');
			const cancel = tap.sent.slice(before).find(m => m.method === 'notifications/cancelled');
			ok(cancel, 'the SDK sent no notifications/cancelled');
			cancelledIds.push(cancel.params.requestId);
			const gone = await waitFor(() => pgrep('sleep 3132').length === 0, 10000);
			ok(gone, `"sleep 3132" still runs 10 s after notifications/cancelled (pids ${pgrep('sleep 3132').join(' ')})`);
			const r = await py(client,
				// Lists the sandbox's processes whose command line has the marker (spelled
				// so that this program's own command line does not).
				'import os\nmark = ("31" + "32").encode()\nme = {os.getpid(), os.getppid()}\nleft = []\n' +
				'for p in os.listdir("/proc"):\n    if p.isdigit() and int(p) not in me:\n        try:\n' +
				'            c = open("/proc/%s/cmdline" % p, "rb").read()\n        except OSError:\n            continue\n' +
				'        if mark in c: left.append(c.replace(b"\\0", b" ").decode())\nprint(left)',
				{ sandbox_id: s.sandbox_id });
			ok(r.status === 'ok' && r.stdout === '[]\n', `inside the sandbox, processes with the marker remain: ${j(r.stdout || r)}`);
			await client.ping();
			const late = tap.received.filter(m => m.id === cancel.params.requestId && ('result' in m || 'error' in m));
			note(`cancellation: ${late.length ? 'the server still answered the cancelled request' : 'no response for the cancelled request'}`);
		} finally {
			await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: s.sandbox_id } }).catch(() => {});
		}
	});

	// A second session on the same store.
	let B = null;
	let sbxA = null;
	await test('list_is_per_session', async () => {
		sbxA = (await callOk(client, 'sandbox_create', { language: 'sh' })).structuredContent;
		B = await connect('b');
		const { structuredContent: lb } = await callOk(B.client, 'sandbox_list', {});
		ok(!lb.sandboxes.some(x => x.sandbox_id === sbxA.sandbox_id), `session B lists session A's sandbox: ${j(lb)}`);
		const sbxB = (await callOk(B.client, 'sandbox_create', { language: 'sh' })).structuredContent;
		const { structuredContent: la } = await callOk(client, 'sandbox_list', {});
		ok(!la.sandboxes.some(x => x.sandbox_id === sbxB.sandbox_id), `session A lists session B's sandbox: ${j(la)}`);
		ok(la.sandboxes.some(x => x.sandbox_id === sbxA.sandbox_id), `session A lost its own sandbox: ${j(la)}`);
	});

	await test('other_session_sandbox_refused', async () => {
		ok(B && sbxA, 'no second session (list_is_per_session failed)');
		await callIsError(B.client, 'run_command', { command: 'echo intruder', sandbox_id: sbxA.sandbox_id });
		await callIsError(B.client, 'sandbox_stop', { sandbox_id: sbxA.sandbox_id });
		const r = await sh(client, 'echo still-mine', { sandbox_id: sbxA.sandbox_id });
		ok(r.stdout === 'still-mine\n', `session A's sandbox after B's attempts: ${j(r)}`);
	});
	if (sbxA) await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: sbxA.sandbox_id } }).catch(() => {});
	if (B) await B.client.close().catch(() => {});

	await test('no_stray_messages', async () => {
		// Everything the server sent is a response to a request we made, or a notification.
		const ids = new Set(tap.sent.filter(m => 'id' in m && 'method' in m).map(m => m.id));
		const bad = tap.received.filter(m => ('result' in m || 'error' in m) && !ids.has(m.id));
		ok(bad.length === 0, `responses to ids never sent: ${j(bad)}`);
		const reqs = tap.received.filter(m => 'method' in m && 'id' in m);
		ok(reqs.length === 0, `the server sent requests to a client with no capabilities: ${j(reqs)}`);
		// A late answer to the cancelled request is allowed (the SDK reports it as an unknown id).
		const errs = A.errors.filter(e => !(errText(e).includes('unknown message ID') &&
			cancelledIds.some(id => errText(e).includes(`"id":${id},`) || errText(e).includes(`"id":${id}}`))));
		ok(errs.length === 0, `the SDK client reported errors: ${errs.map(errText).join('; ')}`);
	});

	await test('sandboxes_die_with_server', async () => {
		const C = await connect('c');
		const pid = C.stdio.pid;
		const { structuredContent: s } = await callOk(C.client, 'sandbox_create', { language: 'sh' });
		const bg = await sh(C.client, 'sleep 3131 >/dev/null 2>&1 </dev/null &', { sandbox_id: s.sandbox_id });
		ok(bg.status === 'ok', `starting a background sleep: ${j(bg)}`);
		// And one still running when the client goes away.
		const inflight = C.client.callTool({ name: 'run_command', arguments: { command: 'sleep 3133' } }).catch(() => {});
		const up = await waitFor(() => pgrep('sleep 3131').length > 0 && pgrep('sleep 3133').length > 0, 15000);
		ok(up, `the marker sleeps never ran (3131: ${pgrep('sleep 3131').length}, 3133: ${pgrep('sleep 3133').length})`);
		const t0 = Date.now();
		await C.client.close();
		void inflight;
		const exited = await waitFor(() => !pidAlive(pid), 10000);
		ok(exited, `the server (pid ${pid}) still runs 10 s after the client closed`);
		note(`sandboxes_die_with_server: server gone ${((Date.now() - t0) / 1000).toFixed(1)} s after close()`);
		const gone = await waitFor(() => pgrep('sleep 313[13]').length === 0, 10000);
		ok(gone, `sandbox processes survive the server: ${execFileSync('sh', ['-c', 'pgrep -af "^sleep 313[13]$" || true'], { encoding: 'utf8' }).trim()}`);
	});

	await client.close().catch(() => {});
	for (const t of TESTS) if (!reporter().seen.has(t)) fail(t, 'not run');
	nt.finish();
}

main().catch(e => harness(new Error(errText(e))));
