// MCP resources through the official TypeScript SDK (issue #15): a client
// follows the resource_link items of a run's result with readResource(),
// lists resources and templates, and hears a not-found as an McpError.
// Prints PASS/FAIL lines like tests/lib.sh; exits 1 when a test failed.
//
// Environment: NSBOX, NSBOX_STORE (python image), SUITE (default mcp_stdio).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as nt from '../lib/nsbox_test.mjs';
import { finish, harness, ok } from '../lib/nsbox_test.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NSBOX = process.env.NSBOX || path.join(HERE, '../../build/nsbox');
const STORE = process.env.NSBOX_STORE;
nt.configure({ defaultSuite: 'mcp_stdio', prefix: 'resources_sdk/' });
// A test passes unless it throws; the error's message is the FAIL reason.
const test = (name, fn) => nt.test(name, fn, { seconds: 120, throws: true, why: e => (e instanceof Error ? e.message : String(e)) });

const CSV = 'a,b\n1,2\n';
const BIN = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13]);

async function main() {
	const client = new Client({ name: 'resources.test.mjs', version: '1' });
	await client.connect(new StdioClientTransport({ command: NSBOX, args: ['--store', STORE, 'serve'], stderr: 'ignore' }));
	let sid, result;

	await test('capability', async () => {
		ok(client.getServerCapabilities()?.resources, `capabilities: ${JSON.stringify(client.getServerCapabilities())}`);
	});

	await test('templates', async () => {
		const t = await client.listResourceTemplates();
		ok(t.resourceTemplates.length === 1 && t.resourceTemplates[0].uriTemplate === 'nsbox://sandboxes/{sandbox_id}/files/{+path}',
			() => JSON.stringify(t));
	});

	await test('run_links_files', async () => {
		const c = await client.callTool({ name: 'sandbox_create', arguments: { language: 'python' } });
		sid = c.structuredContent.sandbox_id;
		result = await client.callTool({
			name: 'execute_code',
			arguments: {
				sandbox_id: sid,
				code: `open('t.csv','w').write(${JSON.stringify(CSV)})\nopen('b.dat','wb').write(bytes(${JSON.stringify([...BIN])}))`,
			},
		});
		const links = result.content.filter(x => x.type === 'resource_link');
		ok(links.length === 2, () => `links: ${JSON.stringify(result.content)}`);
	});

	await test('read_links', async () => {
		for (const link of result.content.filter(x => x.type === 'resource_link')) {
			const r = await client.readResource({ uri: link.uri });
			ok(r.contents.length === 1 && r.contents[0].uri === link.uri, () => JSON.stringify(r));
			if (link.name === 't.csv') ok(r.contents[0].text === CSV && r.contents[0].mimeType === 'text/csv', () => JSON.stringify(r));
			else ok(Buffer.from(r.contents[0].blob, 'base64').equals(BIN), () => JSON.stringify(r));
		}
	});

	await test('list', async () => {
		const r = await client.listResources();
		const uris = r.resources.map(x => x.uri);
		for (const link of result.content.filter(x => x.type === 'resource_link'))
			ok(uris.includes(link.uri), () => `${link.uri} not in ${JSON.stringify(uris)}`);
	});

	await test('not_found_is_an_error', async () => {
		const uri = `nsbox://sandboxes/${sid}/files/workspace/nope`;
		let err;
		try {
			await client.readResource({ uri });
		} catch (e) {
			err = e;
		}
		ok(err && err.code === -32002 && err.data?.uri === uri, () => `got ${err ? `${err.code} ${JSON.stringify(err.data)}` : 'a result'}`);
	});

	await client.callTool({ name: 'sandbox_stop', arguments: { sandbox_id: sid } }).catch(() => {});
	await client.close();
	finish();
}

main().catch(harness);
