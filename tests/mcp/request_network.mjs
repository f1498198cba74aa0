// request_network through the official TypeScript SDK client (issue #30,
// "Asking the user"): a client that declares the elicitation capability and
// answers elicitation/create with setRequestHandler(ElicitRequestSchema)
// grants a sandbox a rule of the operator's ceiling for its life ("sandbox")
// or for its next command ("once"), or refuses (no, decline, a wrong answer,
// no answer at all: timeout); a client without the capability gets an error
// and nothing changes; a rule outside the ceiling is refused without asking
// anyone.  What each grant does is checked for real: a command in the
// sandbox fetches a page from a local HTTP server this program starts,
// through the operator's mapped rule api.test=127.0.0.1:PORT.
// Over stdio (StdioClientTransport) and Streamable HTTP
// (StreamableHTTPClientTransport, `serve --http`).
// Prints PASS/FAIL lines like tests/lib.sh; exits 1 when a test failed.
//
// Environment: NSBOX, NSBOX_STORE (an image for python), SUITE.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import http from 'node:http';
import readline from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as nt from '../lib/nsbox_test.mjs';
import { finish, harness, ok } from '../lib/nsbox_test.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NSBOX = process.env.NSBOX || path.join(HERE, '../../build/nsbox');
const STORE = process.env.NSBOX_STORE;
const STORE_ARGS = STORE ? ['--store', STORE] : [];
nt.configure({ defaultSuite: 'request_network' });
const test = (name, fn) => nt.test(name, fn, { seconds: 90, throws: true, why: e => (e instanceof Error ? e.message : String(e)) });
const j = JSON.stringify;

// The host service the sandboxes try to reach: every request counted.
let hits = 0;
const api = http.createServer((req, res) => {
	hits++;
	res.end('marker-api\n');
});
await new Promise(r => api.listen(0, '127.0.0.1', r));
const PORT = api.address().port;
const CEILING = ['--allow-net', `api.test=127.0.0.1:${PORT}`];
const FETCH = `python3 -c "
import urllib.request
try:
    print(urllib.request.urlopen('http://api.test:${PORT}/x', timeout=5).read().decode().strip())
except Exception as e:
    print('ERR', type(e).__name__)"`;

const text = r => (r.content || []).map(c => c.text || '').join(' ');

/** The answers a test's handler gives, by sandbox id; every question kept. */
function elicitor(client) {
	const h = { asked: [], answer: null, aborted: 0 };
	client.setRequestHandler(ElicitRequestSchema, (req, extra) => {
		h.asked.push(req.params);
		extra.signal.addEventListener('abort', () => h.aborted++);
		return h.answer(req.params, extra);
	});
	return h;
}

async function fetchFrom(client, sid) {
	const before = hits;
	const r = await client.callTool({ name: 'run_command', arguments: { sandbox_id: sid, command: FETCH } });
	const out = (r.structuredContent?.stdout || '').trim();
	return { reached: out === 'marker-api' && hits > before, out, r };
}

async function sandbox(client) {
	const c = await client.callTool({ name: 'sandbox_create', arguments: { language: 'python' } });
	ok(!c.isError && c.structuredContent?.sandbox_id, () => `sandbox_create: ${text(c)}`);
	return c.structuredContent.sandbox_id;
}

const ask = (client, sid, extra = {}) =>
	client.callTool({ name: 'request_network', arguments: { sandbox_id: sid, rule: 'api.test', reason: 'fetch the test API', ...extra } });

async function cases(label, client, h) {
	const made = [];
	const fresh = async () => {
		const sid = await sandbox(client);
		made.push(sid);
		return sid;
	};
	try {
		await test(`${label}/listed_with_a_ceiling`, async () => {
			const t = await client.listTools();
			const tool = t.tools.find(x => x.name === 'request_network');
			ok(tool, () => `no request_network in ${j(t.tools.map(x => x.name))}`);
			ok(j(tool.inputSchema.required) === j(['sandbox_id', 'rule', 'reason']), () => `required ${j(tool.inputSchema.required)}`);
		});

		await test(`${label}/sandbox_for_its_life`, async () => {
			const sid = await fresh();
			const before = await fetchFrom(client, sid);
			ok(!before.reached, () => `reached before any grant: ${before.out}`);
			h.answer = () => ({ action: 'accept', content: { decision: 'sandbox' } });
			const n = h.asked.length;
			const r = await ask(client, sid, { reason: 'fetch\nthe test API\u202e now' });
			ok(!r.isError, () => `request_network: ${text(r)}`);
			ok(h.asked.length === n + 1, () => `asked ${h.asked.length - n} times`);
			const q = h.asked[n];
			ok(q.message.includes(`api.test=127.0.0.1:${PORT}`) && q.message.includes(sid), () => `message: ${q.message}`);
			ok(q.message.includes('Reason: fetch the test API now'), () => `reason not cleaned: ${j(q.message)}`);
			ok(j(q.requestedSchema.properties.decision.enum) === j(['once', 'sandbox', 'no']) && j(q.requestedSchema.required) === j(['decision']),
				() => `schema: ${j(q.requestedSchema)}`);
			const s = r.structuredContent;
			ok(s.granted === 'sandbox' && s.answer === 'accept' && s.decision === 'sandbox', () => `result: ${j(s)}`);
			ok((s.network_rules || []).includes(`api.test=127.0.0.1:${PORT}`), () => `network_rules: ${j(s.network_rules)}`);
			for (const k of [1, 2]) {
				const f = await fetchFrom(client, sid);
				ok(f.reached, () => `command ${k} after the grant did not reach the API: ${f.out}`);
			}
		});

		await test(`${label}/once_then_not`, async () => {
			const sid = await fresh();
			h.answer = () => ({ action: 'accept', content: { decision: 'once' } });
			const r = await ask(client, sid);
			const s = r.structuredContent;
			ok(!r.isError && s.granted === 'once' && s.answer === 'accept', () => `result: ${text(r)}`);
			const first = await fetchFrom(client, sid);
			ok(first.reached, () => `the next command did not reach the API: ${first.out}`);
			const second = await fetchFrom(client, sid);
			ok(!second.reached && second.out.startsWith('ERR'), () => `the command after it reached it too: ${second.out}`);
		});

		for (const [name, answer, want] of [
			['no', { action: 'accept', content: { decision: 'no' } }, { answer: 'accept', decision: 'no' }],
			['decline', { action: 'decline' }, { answer: 'decline', decision: null }],
			['cancel', { action: 'cancel' }, { answer: 'cancel', decision: null }],
			['not_an_option', { action: 'accept', content: { decision: 'always' } }, { answer: 'accept', decision: null }],
		])
			await test(`${label}/${name}_grants_nothing`, async () => {
				const sid = await fresh();
				h.answer = () => answer;
				const n = h.asked.length;
				const r = await ask(client, sid);
				const s = r.structuredContent;
				ok(h.asked.length === n + 1, () => `asked ${h.asked.length - n} times`);
				ok(!r.isError && s.granted === null && s.answer === want.answer && s.decision === want.decision, () => `result: ${text(r)}`);
				const f = await fetchFrom(client, sid);
				ok(!f.reached && f.out.startsWith('ERR'), () => `reached the API after ${name}: ${f.out}`);
			});

		await test(`${label}/client_error_grants_nothing`, async () => {
			const sid = await fresh();
			h.answer = () => {
				throw new McpError(-32000, 'the form could not be shown');
			};
			const r = await ask(client, sid);
			ok(r.isError && /could not ask its user/.test(text(r)) && /the form could not be shown/.test(text(r)) && /nothing was granted/.test(text(r)), () => text(r));
			const f = await fetchFrom(client, sid);
			ok(!f.reached && f.out.startsWith('ERR'), () => `reached the API after an error: ${f.out}`);
		});

		await test(`${label}/timeout_grants_nothing`, async () => {
			const sid = await fresh();
			h.answer = () => new Promise(() => {}); // the user never answers
			const aborted = h.aborted;
			const t0 = Date.now();
			const r = await ask(client, sid, { timeout_s: 2 });
			const took = Date.now() - t0;
			const s = r.structuredContent;
			ok(!r.isError && s.granted === null && s.answer === 'timeout', () => `result: ${text(r)}`);
			ok(took >= 1900 && took < 15000, () => `answered after ${took} ms`);
			// notifications/cancelled for the question reached the client: its handler was aborted
			for (let i = 0; i < 50 && h.aborted === aborted; i++) await new Promise(res => setTimeout(res, 20));
			ok(h.aborted === aborted + 1, () => `the client was not told the question was withdrawn (aborted ${h.aborted - aborted})`);
			const f = await fetchFrom(client, sid);
			ok(!f.reached && f.out.startsWith('ERR'), () => `reached the API after a timeout: ${f.out}`);
		});

		await test(`${label}/outside_the_ceiling_asks_nobody`, async () => {
			const sid = await fresh();
			h.answer = () => ({ action: 'accept', content: { decision: 'sandbox' } });
			const n = h.asked.length;
			for (const rule of ['evil.example', `127.0.0.1:${PORT}`, 'other.test:80', 'pypi']) {
				const r = await ask(client, sid, { rule });
				ok(r.isError && /allow-list|--allow-net/.test(text(r)) && /nobody was asked/.test(text(r)), () => `${rule}: ${text(r)}`);
			}
			ok(h.asked.length === n, () => `the handler was called ${h.asked.length - n} times`);
			const f = await fetchFrom(client, sid);
			ok(!f.reached && f.out.startsWith('ERR'), () => `reached the API: ${f.out}`);
		});

		await test(`${label}/unknown_sandbox`, async () => {
			const n = h.asked.length;
			const r = await ask(client, 'no-such-sandbox');
			ok(r.isError && /no-such-sandbox/.test(text(r)) && h.asked.length === n, () => `${text(r)} (asked ${h.asked.length - n})`);
		});
	} finally {
		for (const sid of made) await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: sid } }).catch(() => {});
	}
}

/** A client without the capability: an error, nothing granted. */
async function noCapability(label, client) {
	await test(`${label}/no_capability_is_an_error`, async () => {
		const sid = await sandbox(client);
		try {
			const r = await ask(client, sid);
			ok(r.isError && /cannot ask its user \(no elicitation capability\)/.test(text(r)) && /--allow-net/.test(text(r)), () => text(r));
			const out = await ask(client, sid, { rule: 'evil.example' }); // the ceiling's error comes first
			ok(out.isError && /nobody was asked/.test(text(out)) && /allow-list/.test(text(out)), () => text(out));
			const f = await fetchFrom(client, sid);
			ok(!f.reached && f.out.startsWith('ERR'), () => `reached the API: ${f.out}`);
		} finally {
			await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: sid } }).catch(() => {});
		}
	});
}

/** nsbox serve over stdio, driven line by line (what the SDK client would
 *  never send: hostile answers, a 2026-07-28 request). */
class Raw {
	constructor() {
		this.p = spawn(NSBOX, [...STORE_ARGS, 'serve', ...CEILING], { stdio: ['pipe', 'pipe', 'ignore'] });
		this.lines = [];
		this.waiters = [];
		readline.createInterface({ input: this.p.stdout }).on('line', l => {
			this.lines.push(JSON.parse(l));
			this.waiters.forEach(w => w());
		});
		this.exited = null;
		this.p.on('exit', code => (this.exited = code));
	}
	send(msg) {
		this.p.stdin.write((typeof msg === 'string' ? msg : j(msg)) + '\n');
	}
	/** The first message (taken) that pred accepts, within ms. */
	async next(pred, ms = 30000) {
		const end = Date.now() + ms;
		for (;;) {
			const i = this.lines.findIndex(pred);
			if (i >= 0) return this.lines.splice(i, 1)[0];
			if (Date.now() > end || this.exited !== null) throw new Error(`no such message within ${ms} ms (server exit ${this.exited}); got ${j(this.lines).slice(0, 300)}`);
			await new Promise(r => {
				this.waiters.push(r);
				setTimeout(r, 100);
			});
			this.waiters = [];
		}
	}
	async call(id, name, args, meta) {
		this.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } });
		return (await this.next(m => m.id === id && !m.method)).result;
	}
	close() {
		this.p.stdin.end();
	}
}

async function raw() {
	const s = new Raw();
	try {
		s.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: { form: {} } }, clientInfo: { name: 'raw', version: '1' } } });
		await s.next(m => m.id === 1);
		s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
		const c = await s.call(2, 'sandbox_create', { language: 'python' });
		const sid = c.structuredContent.sandbox_id;

		await test('stdio/hostile_answers_are_ignored', async () => {
			s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'request_network', arguments: { sandbox_id: sid, rule: 'api.test', reason: 'r', timeout_s: 20 } } });
			const q = await s.next(m => m.method === 'elicitation/create');
			ok(typeof q.id === 'string' && q.params.mode === 'form', () => `question: ${j(q)}`);
			s.send({ jsonrpc: '2.0', id: 'nsbox-ask-999999', result: { action: 'accept', content: { decision: 'sandbox' } } }); // unknown id
			s.send({ jsonrpc: '2.0', id: 3, result: { action: 'accept', content: { decision: 'sandbox' } } }); // the client's own call's id
			s.send({ jsonrpc: '2.0', id: q.id, result: 'sandbox' }); // not an object
			s.send({ jsonrpc: '2.0', id: q.id, result: {}, error: { code: 1, message: 'x' } }); // both
			s.send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
			s.send('{"jsonrpc":"2.0","id":'); // not JSON
			s.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
			ok((await s.next(m => m.id === 4)).result, 'no pong while a question waits');
			s.send({ jsonrpc: '2.0', id: q.id, result: { action: 'decline' } }); // the answer
			s.send({ jsonrpc: '2.0', id: q.id, result: { action: 'accept', content: { decision: 'sandbox' } } }); // a second one
			const r = (await s.next(m => m.id === 3 && !m.method)).result;
			ok(!r.isError && r.structuredContent.answer === 'decline' && r.structuredContent.granted === null, () => `result: ${j(r)}`);
			s.send({ jsonrpc: '2.0', id: 5, method: 'ping' });
			ok((await s.next(m => m.id === 5)).result, 'no pong after the hostile answers');
			const f = await s.call(6, 'run_command', { sandbox_id: sid, command: FETCH });
			ok(f.structuredContent.stdout.trim().startsWith('ERR'), () => `reached the API: ${f.structuredContent.stdout}`);
		});

		await test('stdio/cancelled_call_ends_the_question', async () => {
			s.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'request_network', arguments: { sandbox_id: sid, rule: 'api.test', reason: 'r', timeout_s: 60 } } });
			const q = await s.next(m => m.method === 'elicitation/create');
			const t0 = Date.now();
			s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'the user pressed stop' } });
			const n = await s.next(m => m.method === 'notifications/cancelled', 10000);
			ok(n.params.requestId === q.id && Date.now() - t0 < 5000, () => `withdrawal: ${j(n)} after ${Date.now() - t0} ms`);
			s.send({ jsonrpc: '2.0', id: q.id, result: { action: 'accept', content: { decision: 'sandbox' } } }); // too late
			await new Promise(r => setTimeout(r, 300));
			const f = await s.call(8, 'run_command', { sandbox_id: sid, command: FETCH });
			ok(f.structuredContent.stdout.trim().startsWith('ERR'), () => `reached the API: ${f.structuredContent.stdout}`);
		});

		await test('stdio/modern_request_is_refused', async () => {
			const meta = {
				'io.modelcontextprotocol/protocolVersion': '2026-07-28',
				'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
				'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
			};
			const r = await s.call(9, 'request_network', { sandbox_id: sid, rule: 'api.test', reason: 'r' }, meta);
			ok(r.isError && /2026-07-28/.test(j(r)) && /not supported by nsbox yet/.test(j(r)), () => j(r));
			ok(!s.lines.some(m => m.method === 'elicitation/create'), 'a modern call asked the client');
		});
		s.send({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'sandbox_stop', arguments: { sandbox_id: sid } } });
		await s.next(m => m.id === 10).catch(() => {});
	} finally {
		s.close();
	}
}

/** A Streamable HTTP client that takes only application/json answers and
 *  opens no GET stream: nowhere to put a question, so a clear error. */
async function jsonOnly(url) {
	await test('http/json_only_call_is_an_error', async () => {
		let sid = null;
		let n = 0;
		const post = async body => {
			const headers = { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-11-25' };
			if (sid) headers['mcp-session-id'] = sid;
			const r = await fetch(url, { method: 'POST', headers, body: j(body) });
			sid ??= r.headers.get('mcp-session-id');
			return r.status === 202 ? null : r.json();
		};
		const call = async (name, args) => (await post({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: args } })).result;
		await post({ jsonrpc: '2.0', id: ++n, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'json', version: '1' } } });
		await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
		const box = (await call('sandbox_create', { language: 'python' })).structuredContent.sandbox_id;
		try {
			const r = await call('request_network', { sandbox_id: box, rule: 'api.test', reason: 'r', timeout_s: 5 });
			ok(r.isError && /text\/event-stream/.test(j(r)) && /nothing was granted/.test(j(r)), () => j(r));
		} finally {
			await call('sandbox_stop', { sandbox_id: box }).catch(() => {});
			await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid } }).catch(() => {});
		}
	});
}

/** The session's end (stdin closed) ends a question still waiting: the
 *  server exits in seconds, not after the question's timeout. */
async function sessionEnd() {
	await test('stdio/session_end_ends_the_question', async () => {
		const s = new Raw();
		s.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } });
		await s.next(m => m.id === 1);
		s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
		const sid = (await s.call(2, 'sandbox_create', { language: 'python' })).structuredContent.sandbox_id;
		s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'request_network', arguments: { sandbox_id: sid, rule: 'api.test', reason: 'r', timeout_s: 300 } } });
		const q = await s.next(m => m.method === 'elicitation/create');
		ok(q.params.mode === undefined, () => `a 2025-06-18 client got mode ${q.params.mode}`);
		const t0 = Date.now();
		s.close();
		for (let i = 0; i < 300 && s.exited === null; i++) await new Promise(r => setTimeout(r, 50));
		ok(s.exited === 0 && Date.now() - t0 < 10000, () => `exit ${s.exited} after ${Date.now() - t0} ms`);
	});
}

/** DELETE of the session ends a question still waiting: the DELETE
 *  (answered once the session's calls are done and its sandboxes gone)
 *  comes back in seconds, not after the question's timeout. */
async function sessionDelete(url) {
	await test('http/session_delete_ends_the_question', async () => {
		const c = asking();
		const h = elicitor(c);
		h.answer = () => new Promise(() => {});
		const tr = new StreamableHTTPClientTransport(url);
		await c.connect(tr);
		const sid = await sandbox(c);
		ask(c, sid, { timeout_s: 300 }).catch(() => {});
		for (let i = 0; i < 400 && h.asked.length === 0; i++) await new Promise(r => setTimeout(r, 25));
		ok(h.asked.length === 1, 'the question never came');
		const t0 = Date.now();
		await tr.terminateSession();
		ok(Date.now() - t0 < 10000, () => `DELETE took ${Date.now() - t0} ms`);
		await c.close().catch(() => {});
	});
}

async function httpServer() {
	const env = { ...process.env };
	delete env.NSBOX_TOKEN;
	const p = spawn(NSBOX, [...STORE_ARGS, 'serve', '--http', '127.0.0.1:0', ...CEILING], { env, stdio: ['ignore', 'ignore', 'pipe'] });
	const port = await new Promise((resolve, reject) => {
		let buf = '';
		const t = setTimeout(() => reject(new Error(`the HTTP server did not start: ${buf}`)), 30000);
		p.stderr.on('data', d => {
			buf += d;
			const m = buf.match(/serving MCP on http:\/\/[^ ]*:(\d+)\/mcp/);
			if (m) {
				clearTimeout(t);
				resolve(Number(m[1]));
			}
		});
		p.on('exit', code => reject(new Error(`the HTTP server exited ${code}: ${buf}`)));
	});
	return { p, port };
}

const asking = () => new Client({ name: 'request_network.mjs', version: '1' }, { capabilities: { elicitation: {} } });
const plain = () => new Client({ name: 'request_network.mjs', version: '1' });

async function main() {
	const stdio = () => new StdioClientTransport({ command: NSBOX, args: [...STORE_ARGS, 'serve', ...CEILING], env: { ...process.env }, stderr: 'ignore' });
	let c = asking();
	const h = elicitor(c);
	await c.connect(stdio());
	await cases('stdio', c, h);
	await c.close();
	c = plain();
	await c.connect(stdio());
	await noCapability('stdio', c);
	await c.close();
	await raw();
	await sessionEnd();

	const { p, port } = await httpServer();
	try {
		const url = new URL(`http://127.0.0.1:${port}/mcp`);
		c = asking();
		const hh = elicitor(c);
		await c.connect(new StreamableHTTPClientTransport(url));
		await cases('http', c, hh);
		await c.close();
		c = plain();
		await c.connect(new StreamableHTTPClientTransport(url));
		await noCapability('http', c);
		await c.close();
		await jsonOnly(url);
		await sessionDelete(url);
	} finally {
		p.kill('SIGTERM');
		api.close();
	}
}

main().then(finish).catch(harness);
