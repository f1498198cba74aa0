// File watches through the official TypeScript SDK (issue #28): a client
// that subscribes with subscribeResource() to a file of its sandbox hears
// notifications/resources/updated through setNotificationHandler when the
// file is written, and nothing once it unsubscribed; over stdio
// (StdioClientTransport) and Streamable HTTP (StreamableHTTPClientTransport,
// whose standalone GET stream carries them).
// Prints PASS/FAIL lines like tests/lib.sh; exits 1 when a test failed.
//
// Environment: NSBOX, NSBOX_STORE (python image), SUITE (default services).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as nt from '../lib/nsbox_test.mjs';
import { finish, harness, ok } from '../lib/nsbox_test.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NSBOX = process.env.NSBOX || path.join(HERE, '../../build/nsbox');
const STORE = process.env.NSBOX_STORE;
const STORE_ARGS = STORE ? ['--store', STORE] : [];
nt.configure({ defaultSuite: 'services', prefix: 'watch_sdk/' });
const test = (name, fn) => nt.test(name, fn, { seconds: 120, throws: true, why: e => (e instanceof Error ? e.message : String(e)) });
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function waitFor(cond, ms) {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		if (cond()) return true;
		await sleep(20);
	}
	return cond();
}

async function cases(label, client) {
	const seen = [];
	client.setNotificationHandler(ResourceUpdatedNotificationSchema, n => seen.push(n.params.uri));
	const c = await client.callTool({ name: 'sandbox_create', arguments: { language: 'python' } });
	const sid = c.structuredContent.sandbox_id;
	const uri = `nsbox://sandboxes/${sid}/files/workspace/w.txt`;

	await test(`${label}/capability`, async () => {
		ok(client.getServerCapabilities()?.resources?.subscribe === true, `capabilities: ${JSON.stringify(client.getServerCapabilities())}`);
	});

	await test(`${label}/subscribe_then_updated`, async () => {
		await client.subscribeResource({ uri });
		await client.callTool({ name: 'write_file', arguments: { sandbox_id: sid, path: '/workspace/w.txt', content: 'hello' } });
		ok(await waitFor(() => seen.includes(uri), 5000), () => `no updated for ${uri}: ${JSON.stringify(seen)}`);
	});

	await test(`${label}/unsubscribe_then_quiet`, async () => {
		await client.unsubscribeResource({ uri });
		await sleep(400);
		seen.length = 0;
		await client.callTool({ name: 'write_file', arguments: { sandbox_id: sid, path: '/workspace/w.txt', content: 'again' } });
		await sleep(1000);
		ok(seen.length === 0, () => `updated after unsubscribe: ${JSON.stringify(seen)}`);
	});

	await test(`${label}/not_found_is_an_error`, async () => {
		let err;
		try {
			await client.subscribeResource({ uri: `nsbox://sandboxes/${sid}/files/no/such/dir/x` });
		} catch (e) {
			err = e;
		}
		ok(err && err.code === -32002, () => `got ${err ? err.code : 'a result'}`);
	});
	await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: sid } }).catch(() => {});
}

async function httpServer() {
	const env = { ...process.env };
	delete env.NSBOX_TOKEN;
	const p = spawn(NSBOX, [...STORE_ARGS, 'serve', '--http', '127.0.0.1:0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
	const port = await new Promise((resolve, reject) => {
		let buf = '';
		const t = setTimeout(() => reject(new Error('the HTTP server did not start')), 30000);
		p.stderr.on('data', d => {
			buf += d;
			const m = buf.match(/serving MCP on http:\/\/[^ ]*:(\d+)\/mcp/);
			if (m) {
				clearTimeout(t);
				resolve(Number(m[1]));
			}
		});
	});
	return { p, port };
}

async function main() {
	const stdio = new Client({ name: 'watch.test.mjs', version: '1' });
	await stdio.connect(new StdioClientTransport({ command: NSBOX, args: [...STORE_ARGS, 'serve'], stderr: 'ignore' }));
	await cases('stdio', stdio);
	await stdio.close();

	const { p, port } = await httpServer();
	try {
		const http = new Client({ name: 'watch.test.mjs', version: '1' });
		await http.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
		await sleep(300); // its GET stream opens after notifications/initialized
		await cases('http', http);
		await http.close();
	} finally {
		p.kill('SIGTERM');
	}
}

main().then(finish).catch(harness);
