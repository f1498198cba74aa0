// The server's own tools/list, asked with plain JSON-RPC (no library), over
// stdio and over HTTP, in a 2025-11-25 session and as a 2026-07-28 request:
// what every client in the matrix must list and convert.  Writes
// REF_DIR/tools-{stdio,http}-{2025-11-25,2026-07-28}.json (the `tools`
// arrays; HTTP has upload_url besides, 2026-07-28 marks sandbox_id with
// x-mcp-header) and prints one line each.
//   NSBOX=... NSBOX_STORE=... NSBOX_IMAGE=... MCP_URL=... REF_DIR=... node reference.mjs
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const { NSBOX, NSBOX_STORE, NSBOX_IMAGE, MCP_URL, REF_DIR } = process.env;
const MODERN_META = {
	'io.modelcontextprotocol/protocolVersion': '2026-07-28',
	'io.modelcontextprotocol/clientCapabilities': {},
};
const INIT = {
	protocolVersion: '2025-11-25',
	capabilities: {},
	clientInfo: { name: 'nsbox-clients-reference', version: '1' },
};

async function overStdio() {
	const p = spawn(NSBOX, ['--store', NSBOX_STORE, 'serve', '--image', `python=${NSBOX_IMAGE}`], {
		stdio: ['pipe', 'pipe', 'inherit'],
	});
	const lines = readline.createInterface({ input: p.stdout })[Symbol.asyncIterator]();
	const send = m => p.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
	const answer = async id => {
		for (;;) {
			const { value, done } = await lines.next();
			if (done) throw new Error(`stdio: the server ended before answering request ${id}`);
			const m = JSON.parse(value);
			if (m.id === id) return m;
		}
	};
	send({ id: 1, method: 'initialize', params: INIT });
	await answer(1);
	send({ method: 'notifications/initialized' });
	send({ id: 2, method: 'tools/list' });
	const legacy = (await answer(2)).result.tools;
	send({ id: 3, method: 'tools/list', params: { _meta: MODERN_META } });
	const modern = (await answer(3)).result.tools;
	p.stdin.end();
	return { '2025-11-25': legacy, '2026-07-28': modern };
}

async function overHttp() {
	const post = async (body, headers = {}) => {
		const r = await fetch(MCP_URL, {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
			body: JSON.stringify({ jsonrpc: '2.0', ...body }),
		});
		const text = await r.text();
		if (!r.ok) throw new Error(`HTTP ${r.status} for ${body.method}: ${text}`);
		// JSON, or one SSE event whose data is the answer.
		const data = r.headers.get('content-type')?.startsWith('text/event-stream')
			? text.split('\n').filter(l => l.startsWith('data:') && l.length > 5).map(l => l.slice(5)).pop()
			: text;
		return { r, msg: data ? JSON.parse(data) : null };
	};
	const { r } = await post({ id: 1, method: 'initialize', params: INIT });
	const sid = r.headers.get('mcp-session-id');
	const h = { 'mcp-session-id': sid, 'mcp-protocol-version': INIT.protocolVersion };
	await post({ method: 'notifications/initialized' }, h);
	const legacy = (await post({ id: 2, method: 'tools/list' }, h)).msg.result.tools;
	await fetch(MCP_URL, { method: 'DELETE', headers: h });
	const modern = (
		await post(
			{ id: 3, method: 'tools/list', params: { _meta: MODERN_META } },
			{ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
		)
	).msg.result.tools;
	return { '2025-11-25': legacy, '2026-07-28': modern };
}

for (const [name, get] of [['stdio', overStdio], ['http', overHttp]]) {
	for (const [era, tools] of Object.entries(await get())) {
		fs.writeFileSync(path.join(REF_DIR, `tools-${name}-${era}.json`), JSON.stringify(tools, null, 1));
		console.log(`# reference tools/list over ${name}, ${era}: ${tools.length} tools (${tools.map(t => t.name).join(' ')})`);
	}
}
