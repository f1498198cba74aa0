// mcp-remote: the stdio-to-HTTP proxy that stdio-only hosts (Claude
// Desktop, Cursor, ...) run to reach a remote server, driven over its stdio
// by the official SDK's Client as such a host would.  It converts no
// schema, so its schemas case asks that every tool comes through unchanged
// (inputSchema deep-equal to the server's).  --transport http-only /
// sse-only picks the transport.  Not in the matrix: --protocol auto, which
// speaks 2026-07-28 upstream but (0.15.1) does not mirror x-mcp-header
// parameters into Mcp-Param-* headers, so every call with a sandbox_id is
// refused with -32020 as the revision asks of a server (docs/tools.md,
// "Protocol versions").  It runs as its own process: the wire tap is loaded
// into it with `node --import`.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { j } from '../common.mjs';

export default {
	client: 'mcp-remote',
	configs: {
		http: { transport: 'http', era: '2025-11-25', args: ['--transport', 'http-only'] },
		sse: { transport: 'sse', era: '2025-11-25', args: ['--transport', 'sse-only'] },
	},
	async open(ctx) {
		const { spec } = ctx;
		// mcp-remote keeps OAuth state under ~/.mcp-auth: a home of its own.
		const home = path.join(ctx.work, `${ctx.name}.home`);
		fs.mkdirSync(home, { recursive: true });
		const proxy = path.join(ctx.here, 'node_modules/mcp-remote/dist/proxy.js');
		const url = spec.transport === 'sse' ? ctx.sseUrl : ctx.mcpUrl;
		const stderr = fs.openSync(path.join(ctx.work, `${ctx.name}.stderr`), 'w');
		const transport = new StdioClientTransport({
			command: process.execPath,
			args: [proxy, url, ...spec.args],
			env: {
				PATH: process.env.PATH,
				HOME: home,
				NODE_OPTIONS: `--import=${ctx.tapImport}`,
				NSBOX_TAP_FILE: ctx.tapFile,
			},
			stderr,
		});
		const client = new Client({ name: 'nsbox-clients-matrix', version: '1.0.0' }, { capabilities: {} });
		await client.connect(transport);
		let listed;
		return {
			async listTools() {
				listed = (await client.listTools()).tools;
				return listed.map(t => t.name);
			},
			async checkSchemas(ref) {
				listed ??= (await client.listTools()).tools;
				const problems = [];
				for (const want of ref) {
					const got = listed.find(t => t.name === want.name);
					if (!got) problems.push({ tool: want.name, error: 'not relayed' });
					else if (!isDeepStrictEqual(got.inputSchema, want.inputSchema))
						problems.push({ tool: want.name, error: `inputSchema changed on the way: ${j(got.inputSchema)}` });
				}
				return problems;
			},
			async call(name, args) {
				const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
				return { content: r.content, structured: r.structuredContent, isError: r.isError };
			},
			async close() {
				await client.close();
				fs.closeSync(stderr);
			},
		};
	},
};
