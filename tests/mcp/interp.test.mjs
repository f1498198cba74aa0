// The stateful interpreters (docs/interpreters.md) through the official MCP
// SDK client (@modelcontextprotocol/sdk: Client + StdioClientTransport)
// against `nsbox serve`, with the default image (python + numpy, pandas,
// matplotlib; node; typescript): state across calls, restart, timeout
// (SIGINT, state kept), OOM and exit() (state lost, sandbox lives), figures
// as image content, pandas results, JavaScript and TypeScript state, fresh
// processes, progress notifications, cancellation through an AbortSignal,
// and the write_file + run_command + image workflow.
// Prints one line per test:  PASS: SUITE/name  or  FAIL: SUITE/name: why
// (plus "# ..." notes with the figures), like tests/lib.sh; exits 1 when
// any test failed.
//
// Environment: NSBOX (the binary), NSBOX_STORE (a store holding
// localhost/nsbox-default:latest), SUITE (default interp), NSBOX_LIMITS
// (passed to the server: best-effort when run rootless).
// Run through tests/integration/interp.sh, which prepares all of that.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as nt from '../lib/nsbox_test.mjs';
import { fail, note, ok } from '../lib/nsbox_test.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NSBOX = process.env.NSBOX || path.join(HERE, '../../build/nsbox');
const STORE = process.env.NSBOX_STORE;
nt.configure({ defaultSuite: 'interp' });
const IMAGE = 'localhost/nsbox-default:latest';
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const j = v => {
	const s = JSON.stringify(v);
	return s === undefined ? String(v) : s.length > 400 ? s.slice(0, 400) + '...' : s;
};
const errText = e => (e instanceof Error ? e.message : String(e));

// Runs one test with a deadline; any exception is its FAIL reason.
const test = (name, fn, timeoutMs = 90000) => nt.test(name, fn, { seconds: timeoutMs / 1000, throws: true, why: errText });

async function connect() {
	const stdio = new StdioClientTransport({
		command: NSBOX,
		args: ['--store', STORE, 'serve'],
		// The SDK passes only a few variables by default; NSBOX_LIMITS must
		// reach the server.
		env: { ...process.env },
		stderr: 'pipe',
	});
	const stderr = [];
	stdio.stderr?.on('data', d => {
		stderr.push(String(d));
		if (stderr.length > 200) stderr.splice(0, 100);
	});
	const client = new Client({ name: 'nsbox-interp-tests', version: '1.0.0' }, { capabilities: {} });
	await client.connect(stdio, { timeout: 20000 });
	return { client, stdio, stderr };
}

let client;
async function callRaw(name, args, opts = {}) {
	return client.callTool({ name, arguments: args }, undefined, { timeout: 60000, ...opts });
}
async function tool(name, args, opts) {
	const res = await callRaw(name, args, opts);
	ok(!res.isError, () => `${name} ${j(args)} -> isError: ${j(res.content)}`);
	ok(res.structuredContent, () => `${name}: no structuredContent: ${j(res)}`);
	return res;
}
const rec = async (name, args, opts) => (await tool(name, args, opts)).structuredContent;

const created = [];
async function sandbox(extra = {}) {
	const r = await rec('sandbox_create', { image: IMAGE, ...extra });
	ok(typeof r.sandbox_id === 'string', () => `sandbox_create: ${j(r)}`);
	created.push(r.sandbox_id);
	return r;
}
const code = (sid, language, c, extra = {}, opts) =>
	rec('execute_code', { sandbox_id: sid, language, code: c, ...extra }, opts);
const py = (sid, c, extra, opts) => code(sid, 'python', c, extra, opts);

// A record from the persistent interpreter that ran normally.
function okCell(r, what) {
	ok(r.interpreter === 'persistent', () => `${what}: interpreter ${j(r.interpreter)}, want persistent: ${j(r)}`);
	ok(r.status === 'ok' && r.state_lost === false, () => `${what}: ${j(r)}`);
	return r;
}
const isPng = b64 => Buffer.from(b64, 'base64').subarray(0, 8).equals(PNG);

let best_effort = false;

async function main() {
	({ client } = await connect());

	await test('state_persists_3_calls', async () => {
		const { sandbox_id: sid, limits } = await sandbox();
		best_effort = !/cgroup/.test(String(limits?.enforced));
		note(`limits enforced: ${limits?.enforced}`);
		const t0 = performance.now();
		okCell(await py(sid, 'import math\nx = 40'), 'call 1');
		const t1 = performance.now();
		okCell(await py(sid, 'x += 1\ndef twice(v):\n    return 2 * v'), 'call 2');
		const t2 = performance.now();
		const r = okCell(await py(sid, 'twice(x) + int(math.sqrt(0))'), 'call 3');
		const t3 = performance.now();
		ok(r.result === '82', () => `result ${j(r.result)}, want "82"`);
		note(`python round trip per call (SDK, stdio): first ${(t1 - t0).toFixed(0)} ms (starts the interpreter), ` +
			`then ${(t2 - t1).toFixed(1)} ms, ${(t3 - t2).toFixed(1)} ms; wall_ms of the last ${r.wall_ms}`);
		let n = 20, s = performance.now();
		for (let i = 0; i < n; i++) await py(sid, 'x');
		note(`python: ${n} calls of "x": ${((performance.now() - s) / n).toFixed(1)} ms each`);
	});

	await test('restart_clears_state', async () => {
		const { sandbox_id: sid } = await sandbox();
		okCell(await py(sid, 'kept = "yes"'), 'set');
		ok((await py(sid, 'kept')).result === "'yes'", 'the variable is not there before the restart');
		const r = await py(sid, 'globals().get("kept", "gone")', { restart: true });
		okCell(r, 'after restart');
		ok(r.result === "'gone'", () => `after restart: ${j(r.result)}`);
		const r2 = okCell(await py(sid, 'after = 1 + 1\nafter'), 'the call after');
		ok(r2.result === '2', () => `the call after the restart: ${j(r2)}`);
	});

	await test('timeout_interrupts_keeps_state', async () => {
		const { sandbox_id: sid } = await sandbox();
		okCell(await py(sid, 'before = 123'), 'set');
		const t = performance.now();
		const r = await py(sid, 'while True: pass', { timeout_s: 1 });
		const ms = performance.now() - t;
		ok(r.status === 'timeout' && r.interrupted === true && r.state_lost === false,
			() => `want status timeout, interrupted, state kept: ${j(r)}`);
		ok(r.error_type === 'KeyboardInterrupt', () => `error_type ${j(r.error_type)}`);
		ok(ms < 4000, `took ${ms.toFixed(0)} ms for a 1 s timeout`);
		note(`timeout_s=1 on a busy loop: the call took ${ms.toFixed(0)} ms`);
		const r2 = okCell(await py(sid, 'before'), 'after the timeout');
		ok(r2.result === '123', () => `the variable from before is gone: ${j(r2)}`);
	});

	await test('oom_kills_only_the_interpreter', async () => {
		// The tmpfs disk raises the memory cgroup by its size: 64 + 16 MiB.
		const { sandbox_id: sid } = await sandbox({ memory_mb: 64, disk_mb: 16 });
		okCell(await py(sid, 'small = 5'), 'set');
		const r = await py(sid, 'big = b"x" * (1 << 30)\nlen(big)', { timeout_s: 20 });
		if (best_effort) {
			// No memory cgroup: RLIMIT_AS makes the allocation fail in the
			// cell, which is an ordinary exception.
			ok((r.state_lost === true && r.state_lost_reason === 'oom') ||
				(r.error_type === 'MemoryError' && r.state_lost === false),
			() => `best-effort limits: want a MemoryError or an oom: ${j(r)}`);
			note(`best-effort: the 1 GiB allocation gave ${r.error_type || r.state_lost_reason}`);
		} else {
			ok(r.state_lost === true && r.state_lost_reason === 'oom' && r.oom_killed === true,
				() => `want state_lost oom: ${j(r)}`);
		}
		const r2 = await py(sid, 'globals().get("small", "fresh")');
		okCell(r2, 'the call after the oom');
		ok(r2.result === (r.state_lost ? "'fresh'" : '5'), () => `after: ${j(r2)} (oom record ${j(r)})`);
		const c = await rec('run_command', { sandbox_id: sid, command: 'echo alive' });
		ok(c.stdout === 'alive\n', () => `the sandbox does not run commands: ${j(c)}`);
	});

	await test('exit_loses_state', async () => {
		const { sandbox_id: sid } = await sandbox();
		okCell(await py(sid, 'v = 1'), 'set');
		const r = await py(sid, 'import sys\nsys.exit(3)');
		ok(r.state_lost === true && r.state_lost_reason === 'exit(3)', () => `sys.exit(3): ${j(r)}`);
		const r2 = okCell(await py(sid, '"v" in globals()'), 'after sys.exit');
		ok(r2.result === 'False', () => `after sys.exit the state is there: ${j(r2)}`);
		const r3 = await py(sid, 'exit()');
		ok(r3.state_lost === true && r3.state_lost_reason === 'exit(0)', () => `exit(): ${j(r3)}`);
		okCell(await py(sid, '1'), 'after exit()');
	});

	// An interpreter that dies between calls (issue #24): the next call
	// says the earlier state was lost and why, runs its code in a new
	// interpreter, and reports the code's own outcome.
	const waitGone = async (sid, pid) => {
		ok(/^[0-9]+$/.test(String(pid)), () => `no pid: ${j(pid)}`);
		// The watching command may itself be the OOM killer's victim (a
		// small process beside a hog whose memory is partly not its RSS):
		// then it looks again, as the interpreter's death is still to come.
		let c;
		for (let tries = 0; tries < 3; tries++) {
			c = await rec('run_command', {
				sandbox_id: sid, timeout_s: 30,
				command: `i=0; while [ -e /proc/${pid} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; [ ! -e /proc/${pid} ]`,
			});
			if (c.status !== 'oom') break;
		}
		ok(c.exit_code === 0, () => `the interpreter (pid ${pid}) did not die: ${j(c)}`);
	};
	// These four stop their sandboxes: the session keeps at most 16.
	const stop = sid => rec('sandbox_stop', { sandbox_id: sid });
	const ranFresh = (r, reason, what) => {
		ok(r.interpreter === 'persistent' && r.status === 'ok' && r.exit_code === 0,
			() => `${what}: the code did not run as its own: ${j(r)}`);
		ok(r.stdout === 'ran\n' && r.result === 'False', () => `${what}: stdout/result ${j(r)}`);
		ok(r.state_lost === true && r.state_lost_reason === reason,
			() => `${what}: want state_lost "${reason}": ${j(r)}`);
	};

	await test('died_between_calls_kill_all_runs_the_next_cell', async () => {
		const { sandbox_id: sid } = await sandbox();
		const a = okCell(await py(sid, 'import os\nv = 1\nos.getpid()'), 'set');
		await callRaw('run_command', { sandbox_id: sid, command: 'kill -9 -1' });
		await waitGone(sid, a.result);
		const r = await py(sid, 'open("after-kill", "w").write("ok")\nprint("ran")\n"v" in globals()');
		ranFresh(r, 'between calls: crash (signal 9)', 'after kill -9 -1');
		const f = await rec('run_command', { sandbox_id: sid, command: 'cat after-kill' });
		ok(f.stdout === 'ok', () => `the cell's file is not there: ${j(f)}`);
		const r2 = okCell(await py(sid, '1 + 1'), 'the call after');
		ok(r2.result === '2', () => `the call after: ${j(r2)}`);
		await stop(sid);
	});

	await test('died_between_calls_exit_in_a_thread', async () => {
		const { sandbox_id: sid } = await sandbox();
		const a = okCell(await py(sid, 'import os, threading, time\nw = 2\n' +
			'threading.Thread(target=lambda: (time.sleep(0.3), os._exit(7)), daemon=True).start()\nos.getpid()'), 'set');
		await waitGone(sid, a.result);
		ranFresh(await py(sid, 'print("ran")\n"w" in globals()'), 'between calls: exit(7)', 'after os._exit(7)');
		await stop(sid);
	});

	await test('died_between_calls_oom_in_a_thread', async () => {
		const { sandbox_id: sid } = await sandbox({ memory_mb: 64, disk_mb: 16 });
		const a = okCell(await py(sid, 'import os, threading, time\nu = 3\ndef hog():\n    time.sleep(0.3)\n' +
			'    global big\n    big = b"x" * (1 << 30)\nt = threading.Thread(target=hog, daemon=True)\nt.start()\nos.getpid()'), 'set');
		if (best_effort) {
			// No memory cgroup: RLIMIT_AS fails the thread's allocation with
			// a MemoryError in that thread; the interpreter lives on.
			const r = okCell(await py(sid, 't.join()\n"u" in globals()'), 'after');
			ok(r.result === 'True', () => `best-effort: the state is gone: ${j(r)}`);
			note('best-effort limits: the thread got a MemoryError, no OOM kill');
		} else {
			await waitGone(sid, a.result);
			ranFresh(await py(sid, 'print("ran")\n"u" in globals()'), 'between calls: oom', 'after the OOM kill');
		}
		await stop(sid);
	});

	await test('error_value_is_the_message', async () => {
		const { sandbox_id: sid } = await sandbox();
		const r = await py(sid, 'raise ValueError("bad value " + str(6 * 7))');
		ok(r.status === 'error' && r.error_type === 'ValueError' && r.error_value === 'bad value 42',
			() => `python ValueError: ${j(r)}`);
		const k = await py(sid, '{}["missing"]');
		ok(k.error_type === 'KeyError' && k.error_value === "'missing'", () => `python KeyError: ${j(k)}`);
		const s = okCell(await py(sid, '1'), 'after');
		ok(s.error_type === undefined && s.error_value === undefined, () => `a cell that ran has error fields: ${j(s)}`);
		const js = await code(sid, 'javascript', 'throw new TypeError("nope " + 6 * 7)');
		ok(js.status === 'error' && js.error_type === 'TypeError' && js.error_value === 'nope 42',
			() => `javascript TypeError: ${j(js)}`);
		await stop(sid);
	});

	await test('figure_without_savefig_is_image_content', async () => {
		const { sandbox_id: sid } = await sandbox();
		const res = await tool('execute_code', {
			sandbox_id: sid, language: 'python',
			code: 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("no savefig")',
		});
		const r = okCell(res.structuredContent, 'plot');
		ok(Array.isArray(r.figures) && r.figures.length === 1 && /\/figure-\d+-1\.png$/.test(r.figures[0]),
			() => `figures: ${j(r.figures)}`);
		const imgs = res.content.filter(c => c.type === 'image');
		ok(imgs.length === 1, () => `image blocks: ${j(res.content.map(c => c.type))}`);
		ok(imgs[0].mimeType === 'image/png' && isPng(imgs[0].data),
			() => `not a PNG: ${imgs[0].mimeType} ${String(imgs[0].data).slice(0, 20)}`);
		const base = path.basename(r.figures[0]);
		ok(r.files.some(f => path.basename(f.path ?? f.name ?? String(f)) === base),
			() => `files does not name ${base}: ${j(r.files)}`);
		note(`figure: ${r.figures[0]}, ${Buffer.from(imgs[0].data, 'base64').length} bytes of PNG, call wall_ms ${r.wall_ms}`);
		// The figure was closed: the next cell returns none.
		const r2 = await tool('execute_code', { sandbox_id: sid, language: 'python', code: '1' });
		ok(r2.structuredContent.figures.length === 0 && !r2.content.some(c => c.type === 'image'),
			() => `a figure came back again: ${j(r2.structuredContent.figures)}`);
	});

	await test('dataframe_result_is_text_table', async () => {
		const { sandbox_id: sid } = await sandbox();
		const r = okCell(await py(sid, 'import pandas as pd\npd.DataFrame({"a": [1, 2], "b": [3.5, 4.5]})'), 'df');
		const lines = String(r.result).split('\n').map(l => l.trim().split(/\s+/));
		ok(j(lines) === j([['a', 'b'], ['0', '1', '3.5'], ['1', '2', '4.5']]), () => `result ${j(r.result)}`);
	});

	await test('javascript_state', async () => {
		const { sandbox_id: sid } = await sandbox();
		const t = performance.now();
		okCell(await code(sid, 'javascript', 'let a = 20; const k = 2; function inc(v) { return v + 1; }'), 'js 1');
		const t1 = performance.now();
		okCell(await code(sid, 'javascript', 'a = inc(a) * k'), 'js 2');
		const r = okCell(await code(sid, 'javascript', '[a, typeof inc, k]'), 'js 3');
		ok(r.result === '[ 42, \'function\', 2 ]', () => `result ${j(r.result)}`);
		note(`javascript: first call ${(t1 - t).toFixed(0)} ms (starts node), later ${(performance.now() - t1).toFixed(0)} ms for two`);
	});

	await test('typescript_state', async () => {
		// Under best-effort limits the memory limit is RLIMIT_AS (512 MiB):
		// node loading typescript.js ran out of address space about every
		// other start until interpreters got MALLOC_ARENA_MAX=2 (glibc's
		// per-thread arenas, mcp/interp/interp.c): the default must do.
		const { sandbox_id: sid } = await sandbox({});
		const t = performance.now();
		okCell(await code(sid, 'typescript', 'interface P { x: number }\nlet n: number = 5;\nconst p: P = { x: n };'), 'ts 1');
		const t1 = performance.now();
		okCell(await code(sid, 'typescript', 'function show(v: number): string { return `v=${v}`; }'), 'ts 2');
		const r = okCell(await code(sid, 'typescript', 'show(p.x * 2 + n)'), 'ts 3');
		ok(r.result === "'v=15'", () => `result ${j(r.result)}`);
		note(`typescript: first call ${(t1 - t).toFixed(0)} ms (starts node + typescript), later ${(performance.now() - t1).toFixed(0)} ms for two`);
	});

	await test('fresh_runs_a_process', async () => {
		const { sandbox_id: sid } = await sandbox();
		okCell(await py(sid, 'z = 9\nimport os\nos.getpid()'), 'set');
		const pidKept = (await py(sid, 'os.getpid()')).result;
		const r = await py(sid, 'import os\nprint(globals().get("z"), os.getpid())', { fresh: true });
		ok(r.interpreter === 'process' && r.status === 'ok', () => `fresh: ${j(r)}`);
		ok(!('result' in r) && !('state_lost' in r), () => `a process record has interpreter fields: ${j(r)}`);
		const [z, pid] = r.stdout.trim().split(' ');
		ok(z === 'None' && pid !== pidKept, () => `fresh saw the state: ${j(r.stdout)} (interpreter pid ${pidKept})`);
		const r2 = okCell(await py(sid, 'z'), 'after fresh');
		ok(r2.result === '9', () => `state after fresh: ${j(r2)}`);
	});

	await test('progress_notifications_carry_output', async () => {
		const { sandbox_id: sid } = await sandbox();
		const seen = [];
		const t = performance.now();
		const r = await py(sid, 'import time\nfor i in range(6):\n    print(f"line {i}")\n    time.sleep(0.5)',
			{}, { onprogress: p => seen.push({ ...p, at: performance.now() - t }) });
		okCell(r, 'cell');
		ok(r.stdout === [0, 1, 2, 3, 4, 5].map(i => `line ${i}\n`).join(''), () => `stdout ${j(r.stdout)}`);
		const withLines = seen.filter(p => /line \d/.test(p.message ?? ''));
		ok(seen.length >= 2 && withLines.length >= 2, () => `progress: ${j(seen)}`);
		ok(seen[0].at < 2500, () => `the first progress came only after ${seen[0].at.toFixed(0)} ms`);
		note(`progress over a 3 s cell: ${seen.length} notifications: ${seen.map(p => `${p.at.toFixed(0)}ms ${j(p.message)}`).join(', ')}`);
	});

	await test('cancel_with_abortsignal_keeps_state', async () => {
		const { sandbox_id: sid } = await sandbox();
		okCell(await py(sid, 'y = 7'), 'set');
		const ac = new AbortController();
		const t = performance.now();
		setTimeout(() => ac.abort('test cancels'), 1000);
		let err;
		try {
			await callRaw('execute_code', { sandbox_id: sid, language: 'python', code: 'import time\nwhile True: time.sleep(0.01)', timeout_s: 60 }, { signal: ac.signal });
		} catch (e) {
			err = e;
		}
		ok(err !== undefined, 'the aborted call did not reject');
		const ms = performance.now() - t;
		ok(ms < 3000, `the aborted call took ${ms.toFixed(0)} ms`);
		// The server sent SIGINT: the driver answers within the grace, the
		// state is kept (docs/interpreters.md, the host side).
		const t2 = performance.now();
		const r = okCell(await py(sid, 'y'), 'after the cancel');
		ok(r.result === '7', () => `state after cancel: ${j(r)}`);
		note(`cancel: the call ended ${ms.toFixed(0)} ms after it started (abort at 1000), the next call took ${(performance.now() - t2).toFixed(0)} ms`);
	});

	await test('workflow_write_run_histogram', async () => {
		const { sandbox_id: sid } = await sandbox();
		const script = [
			'import numpy as np',
			'import matplotlib',
			'matplotlib.use("Agg")',
			'import matplotlib.pyplot as plt',
			'data = np.random.default_rng(0).normal(size=2000)',
			'plt.hist(data, bins=40)',
			'plt.savefig("histogram.png")',
			'print("mean %.3f" % data.mean())',
		].join('\n');
		await tool('write_file', { sandbox_id: sid, path: 'analysis.py', content: script });
		const res = await tool('run_command', { sandbox_id: sid, command: 'python3 analysis.py' });
		const r = res.structuredContent;
		ok(r.status === 'ok' && /^mean -?\d\.\d{3}\n$/.test(r.stdout), () => `run: ${j(r)}`);
		ok(r.files.some(f => j(f).includes('histogram.png')), () => `files: ${j(r.files)}`);
		const imgs = res.content.filter(c => c.type === 'image');
		ok(imgs.length === 1 && imgs[0].mimeType === 'image/png' && isPng(imgs[0].data),
			() => `image content: ${j(res.content.map(c => [c.type, c.mimeType]))}`);
		note(`workflow: histogram.png ${Buffer.from(imgs[0].data, 'base64').length} bytes, run_command wall_ms ${r.wall_ms}`);
	});

	for (const sid of created) await callRaw('sandbox_stop', { sandbox_id: sid }).catch(() => {});
	await client.close();
}

try {
	await main();
} catch (e) {
	fail('harness', errText(e));
}
nt.finish();
