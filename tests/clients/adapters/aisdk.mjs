// The AI SDK: @ai-sdk/mcp's createMCPClient, its tools() (the tool set
// generateText gets: each tool's inputSchema through the SDK's asSchema, as
// a model provider reads it) and each tool's execute(), as the SDK runs a
// model's tool call.  It speaks 2026-07-28 by default (server/discover
// first); protocolVersionDiscovery: false keeps it on initialize.
import { createMCPClient } from '@ai-sdk/mcp';
import { StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { asSchema } from '@ai-sdk/provider-utils';
import { checkConverted, stdioServer } from '../common.mjs';

export default {
	client: 'aisdk',
	configs: {
		stdio: { transport: 'stdio', era: '2026-07-28' },
		'stdio-2025': { transport: 'stdio', era: '2025-11-25', discovery: false },
		http: { transport: 'http', era: '2026-07-28' },
		'http-2025': { transport: 'http', era: '2025-11-25', discovery: false },
		sse: { transport: 'sse', era: '2025-11-25' },
	},
	async open(ctx) {
		const { spec } = ctx;
		const transport =
			spec.transport === 'stdio'
				? new StdioMCPTransport({ ...stdioServer(ctx), env: { PATH: process.env.PATH }, stderr: 'inherit' })
				: { type: spec.transport, url: spec.transport === 'http' ? ctx.mcpUrl : ctx.sseUrl };
		const client = await createMCPClient({
			transport,
			clientName: 'nsbox-clients-matrix',
			...(spec.discovery === false ? { protocolVersionDiscovery: false } : {}),
		});
		let tools;
		try {
			tools = await client.tools();
		} catch (e) {
			await client.close().catch(() => {});
			throw e;
		}
		let n = 0;
		return {
			listTools: async () => Object.keys(tools),
			async checkSchemas(ref) {
				const converted = new Map();
				for (const [name, tool] of Object.entries(tools)) {
					try {
						converted.set(name, await asSchema(tool.inputSchema).jsonSchema);
					} catch (e) {
						converted.set(name, e);
					}
				}
				return checkConverted(ref, converted);
			},
			async call(name, args) {
				const tool = tools[name];
				if (!tool) throw new Error(`the AI SDK built no tool "${name}"`);
				const r = await tool.execute(args, { toolCallId: `call-${++n}`, messages: [] });
				return { content: r.content, structured: r.structuredContent, isError: r.isError };
			},
			close: () => client.close(),
		};
	},
};
