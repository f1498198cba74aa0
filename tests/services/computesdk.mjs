// The ComputeSDK provider capability probes, ported to nsbox's MCP tools
// (issue #28; the mapping table is in docs/services.md, "ComputeSDK").
// Upstream: computesdk/computesdk, packages/test-utils/src/provider-test-suite.ts
// (defineProviderTests: every provider package runs it; supportsGetUrl and
// supportsStreaming are its opt-in capability flags, background is always
// probed).  Each probe keeps upstream's command and assertion; where
// upstream asserts a timing, the port asserts the ordering it stands for,
// without a clock (tests never assert timings here).
//
//   background  runCommand('sleep 1', {background: true}) → exitCode 0
//               = process_start (a handle at once) + process_wait → 0; and
//               the call returned while the command was still running
//   getUrl      getUrl({port: 3000}) → /^(https?|wss?):\/\/.+/
//               = port_expose {port: 3000}; and the URL serves the app
//   getUrl wss  getUrl({port, protocol: 'wss'}) → a ws(s):// URL
//               = port_expose's URL with the ws scheme; a WebSocket
//               handshake and one message through it
//   streaming   runCommand(cmd, {onStdout, onStderr}) (three probes)
//               = run_command with a progressToken: notifications/progress
//               carry the new text (_meta io.nsbox/stream, io.nsbox/offset)
//
// usage: MCP_URL=http://localhost:PORT/mcp node computesdk.mjs   (HTTP)
//        NSBOX=... NSBOX_STORE=... node computesdk.mjs          (stdio)
// The store must hold the default image.  Prints PASS/FAIL lines
// (tests/lib/nsbox_test.mjs) named SUITE/computesdk_NAME.
import { createRequire } from 'node:module';
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as nt from '../lib/nsbox_test.mjs';
import { ok } from '../lib/nsbox_test.mjs';

const require = createRequire(new URL('../mcp/package.json', import.meta.url));
const { Client } = await import(require.resolve('@modelcontextprotocol/sdk/client/index.js'));
const HERE = path.dirname(fileURLToPath(import.meta.url));
const HTTP = process.env.MCP_URL;

nt.configure({ defaultSuite: 'services', prefix: 'computesdk_' });
const test = (name, fn) => nt.test(name, fn, { seconds: 180, throws: true, why: e => (e instanceof Error ? e.message : String(e)) });

let transport;
if (HTTP) {
	const { StreamableHTTPClientTransport } = await import(require.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js'));
	transport = new StreamableHTTPClientTransport(new URL(HTTP));
} else {
	const { StdioClientTransport } = await import(require.resolve('@modelcontextprotocol/sdk/client/stdio.js'));
	const NSBOX = process.env.NSBOX || path.join(HERE, '../../build/nsbox');
	transport = new StdioClientTransport({ command: NSBOX, args: ['--store', process.env.NSBOX_STORE, 'serve'], stderr: 'ignore' });
}
const client = new Client({ name: 'computesdk-probes', version: '1' });
await client.connect(transport);

/** structuredContent of a tool call; throws with the tool's text on isError. */
async function tool(name, args, opts = {}) {
	const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 170000, ...opts });
	if (r.isError) throw new Error(`${name}: ${r.content?.map(c => c.text).join(' ')}`);
	return r.structuredContent ?? JSON.parse(r.content[0].text);
}

// The sandbox upstream's beforeEach makes (provider.sandbox.create()).
const sid = (await tool('sandbox_create', {})).sandbox_id;
const run = command => tool('run_command', { sandbox_id: sid, command, timeout_s: 60 });

// -- background ----------------------------------------------------------------
await test('background', async () => {
	// upstream: runCommand('sleep 1', { background: true }) → exitCode 0.
	const h = (await tool('process_start', { sandbox_id: sid, command: 'sleep 1' })).handle;
	ok(typeof h === 'string' && h.length > 0, `process_start gave handle ${JSON.stringify(h)}`);
	const w = await tool('process_wait', { handle: h, timeout_s: 60 });
	ok(w.exit_code === 0, () => `process_wait: ${JSON.stringify(w)}`);
});

await test('background_returns_while_running', async () => {
	// What "background" means, shown without a clock: the command cannot end
	// before /tmp/go exists, which is made only after process_start returned.
	const h = (await tool('process_start', {
		sandbox_id: sid,
		command: 'while [ ! -e /tmp/go ]; do sleep 0.05; done; echo done > /tmp/bg.txt',
	})).handle;
	const list = await tool('process_list', { sandbox_id: sid });
	const mine = (list.processes || []).find(p => p.handle === h);
	ok(mine && (mine.running === true || mine.state === 'running'), () => `process_list: ${JSON.stringify(list)}`);
	await run('touch /tmp/go');
	const w = await tool('process_wait', { handle: h, timeout_s: 60 });
	ok(w.exit_code === 0, () => `process_wait: ${JSON.stringify(w)}`);
	const r = await run('cat /tmp/bg.txt');
	ok(r.stdout === 'done\n', () => `the background command's file: ${JSON.stringify(r)}`);
});

// -- getUrl --------------------------------------------------------------------
const URL_RE = /^(https?|wss?):\/\/.+/;
let httpUrl;
await test('getUrl', async () => {
	// upstream: getUrl({ port: 3000 }) → a non-empty string matching URL_RE.
	// nsbox returns a URL once something listens, so an app is started first.
	await tool('write_file', { sandbox_id: sid, path: 'server.js', content: fs.readFileSync(path.join(HERE, 'apps/node_app.js'), 'utf8') });
	await tool('process_start', { sandbox_id: sid, command: 'node server.js' });
	httpUrl = (await tool('port_expose', { sandbox_id: sid, port: 3000, wait_s: 60 })).url;
	ok(typeof httpUrl === 'string' && URL_RE.test(httpUrl), `port_expose gave ${JSON.stringify(httpUrl)}`);
	const res = await fetch(new URL('api/info', httpUrl));
	const body = await res.json();
	ok(res.status === 200 && body.message === 'hello from the sandbox', () => `GET api/info: ${res.status} ${JSON.stringify(body)}`);
	nt.note(`computesdk getUrl(3000): ${httpUrl}`);
});

/** A WebSocket handshake on url (ws: or wss:) and one text message sent
 *  and its answer read; Node 18 has no WebSocket client, so by hand. */
function wsRoundTrip(url, text) {
	return new Promise((resolve, reject) => {
		const u = new URL(url);
		const key = crypto.randomBytes(16).toString('base64');
		const req = http.request({
			host: u.hostname, port: u.port, path: u.pathname + u.search,
			headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': key },
		});
		const timer = setTimeout(() => { req.destroy(); reject(new Error(`${url}: no answer in 30 s`)); }, 30000);
		req.on('response', r => { clearTimeout(timer); reject(new Error(`${url}: HTTP ${r.statusCode}, not an upgrade`)); });
		req.on('error', e => { clearTimeout(timer); reject(e); });
		req.on('upgrade', (res, sock, head) => {
			const want = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
			if (res.headers['sec-websocket-accept'] !== want) { clearTimeout(timer); sock.destroy(); return reject(new Error('bad Sec-WebSocket-Accept')); }
			const mask = crypto.randomBytes(4), body = Buffer.from(text);
			const masked = Buffer.from(body.map((b, i) => b ^ mask[i & 3]));
			sock.write(Buffer.concat([Buffer.from([0x81, 0x80 | body.length]), mask, masked]));
			let buf = head;
			const onData = d => {
				buf = Buffer.concat([buf, d]);
				if (buf.length >= 2 && buf.length >= 2 + (buf[1] & 0x7f)) {
					clearTimeout(timer);
					sock.destroy();
					resolve(buf.subarray(2, 2 + (buf[1] & 0x7f)).toString());
				}
			};
			sock.on('data', onData);
			if (head.length) onData(Buffer.alloc(0));
		});
		req.end();
	});
}

await test('getUrl_wss', async () => {
	// upstream: getUrl({ port: ports[1], protocol: 'wss' }) → a URL matching
	// URL_RE.  nsbox's URL for a port serves HTTP and WebSocket alike: the
	// ws: form of it (wss: behind TLS) reaches the app's WebSocket.
	await tool('write_file', { sandbox_id: sid, path: 'dev/server.js', content: fs.readFileSync(path.join(HERE, 'apps/hmr_server.js'), 'utf8') });
	await tool('process_start', { sandbox_id: sid, command: 'node server.js', workdir: '/workspace/dev' });
	const url = (await tool('port_expose', { sandbox_id: sid, port: 5173, wait_s: 60 })).url;
	const wsUrl = new URL('ws', url);
	wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:';
	ok(URL_RE.test(wsUrl.href), `ws URL ${wsUrl.href}`);
	const answer = await wsRoundTrip(wsUrl.href.replace(/^ws/, 'http'), 'ping');
	ok(answer === 'pong', `the app answered ${JSON.stringify(answer)}`);
});

// -- streaming (upstream's "Live Command Output") ---------------------------------
const STREAM = 'io.nsbox/stream';
let nToken = 0;
/** run_command with a progress token: [record, [{stream, text}, ...]]. */
async function streamed(command, extraArgs = {}, onChunk = () => {}) {
	const chunks = [];
	const r = await client.callTool(
		{ name: 'run_command', arguments: { sandbox_id: sid, command, ...extraArgs }, _meta: { progressToken: `probe-${++nToken}` } },
		undefined,
		{
			timeout: 170000,
			onprogress: p => {
				const s = p._meta?.[STREAM];
				if (s && p.message) {
					chunks.push({ stream: s, text: p.message });
					onChunk(s, p.message);
				}
			},
		},
	);
	if (r.isError && !r.structuredContent) throw new Error(`run_command: ${r.content?.map(c => c.text).join(' ')}`);
	return [r.structuredContent, chunks];
}
const joined = (chunks, s) => chunks.filter(c => c.stream === s).map(c => c.text).join('');

/** What a ComputeSDK provider over nsbox hands its onStdout/onStderr: the
 *  streamed chunks, then whatever of the record was not streamed (a run
 *  over within 20 ms streams nothing: docs/tools.md, "Progress") as one
 *  last chunk, marked late. */
function withRest(r, chunks) {
	for (const s of ['stdout', 'stderr']) {
		const got = joined(chunks, s);
		if (r[s].startsWith(got) && r[s].length > got.length) chunks.push({ stream: s, text: r[s].slice(got.length), late: true });
	}
	return chunks;
}

// A gate the command waits at: a one-connection HTTP server on a port of
// the sandbox, opened by the client through port_expose's URL.  (A second
// call on the same sandbox would wait for the running one: a kept sandbox
// runs one call at a time.)
const GATE = `import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
c, _ = s.accept()
c.recv(65536)
c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 4\\r\\nConnection: close\\r\\n\\r\\nopen")
c.close()
`;

/** GETs url until it answers 200 (the gate listens only after "tick 1"). */
async function knock(url) {
	const end = Date.now() + 60000;
	for (;;) {
		try {
			const res = await fetch(url);
			if (res.status === 200 && (await res.text()) === 'open') return;
		} catch {}
		if (Date.now() > end) throw new Error(`the gate at ${url} never opened`);
		await new Promise(r => setTimeout(r, 100));
	}
}

await test('streaming_while_running', async () => {
	// upstream: `for i in 1 2 3 4 5; do echo tick $i; sleep 1; done`; the first
	// chunk must come in the first half of the run.  Here the order is made
	// certain instead of timed: after "tick 1" the command waits at a gate
	// that the client opens only when that first chunk has reached it.
	await tool('write_file', { sandbox_id: sid, path: '/tmp/gate.py', content: GATE });
	const gate = (await tool('port_expose', { sandbox_id: sid, port: 7000, wait_s: 0 })).url;
	let opened;
	const [r, chunks] = await streamed(
		"sh -c 'echo tick 1; python3 /tmp/gate.py 7000; for i in 2 3 4 5; do echo tick $i; sleep 0.2; done'",
		{ timeout_s: 120 },
		s => {
			if (s === 'stdout' && !opened) opened = knock(gate);
		},
	);
	ok(opened, () => `no chunk came while the command ran: ${JSON.stringify(r)}`);
	await opened;
	ok(r.exit_code === 0, () => `record: ${JSON.stringify(r)}`);
	ok(chunks.length >= 2, () => `${chunks.length} chunks`);
	ok(joined(chunks, 'stdout') === r.stdout, () => `streamed ${JSON.stringify(joined(chunks, 'stdout'))}, record ${JSON.stringify(r.stdout)}`);
	for (let i = 1; i <= 5; i++) ok(r.stdout.includes(`tick ${i}`), `no tick ${i}: ${r.stdout}`);
});

await test('streaming_stderr_apart_exit_3', async () => {
	// upstream, as is: stdout and stderr apart, exit status 3.
	const [r, streamedChunks] = await streamed("sh -c 'echo out; echo err 1>&2; exit 3'");
	const chunks = withRest(r, streamedChunks);
	ok(r.exit_code === 3, () => `record: ${JSON.stringify(r)}`);
	ok(joined(chunks, 'stdout').includes('out') && !joined(chunks, 'stdout').includes('err'), () => `stdout chunks ${JSON.stringify(chunks)}`);
	ok(joined(chunks, 'stderr').includes('err'), () => `stderr chunks ${JSON.stringify(chunks)}`);
});

await test('streaming_timeout', async () => {
	// upstream: `sh -c 'echo starting; sleep 60'` with a 5 s timeout comes back
	// at the deadline (durationMs < 30000) and not as a success.  Here: the
	// record says timed out, the output before it streamed, and the call's
	// own timeout (50 s) is shorter than the sleep.
	const [r, chunks] = await Promise.race([
		streamed("sh -c 'echo starting; sleep 60'", { timeout_s: 5 }),
		new Promise((_, rej) => setTimeout(() => rej(new Error('no answer in 50 s: the timeout was not enforced')), 50000)),
	]);
	ok(r.exit_code !== 0 && r.timed_out === true, () => `record: ${JSON.stringify(r)}`);
	ok(joined(chunks, 'stdout') === 'starting\n' && !chunks.some(c => c.late), () => `chunks ${JSON.stringify(chunks)}`);
});

await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: sid } }).catch(() => {});
await client.close();
nt.finish();
