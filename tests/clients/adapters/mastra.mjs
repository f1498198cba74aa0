// Mastra: @mastra/mcp's MCPClient (stdio and Streamable HTTP; it has no
// SSE transport), its toolsets (Mastra tools, as an Agent gets them: the
// inputSchema is a Standard Schema whose JSON Schema Mastra hands to the
// model, and which validates the arguments), each tool's execute().  By
// default it probes with server/discover and speaks 2026-07-28; pinned to
// protocolVersion: "legacy" it uses initialize, and then puts
// io.modelcontextprotocol/logLevel into every request's _meta.
import { MCPClient, getMcpCallToolContent } from '@mastra/mcp';
import { checkConverted, j, stdioServer } from '../common.mjs';

let clients = 0;

export default {
	client: 'mastra',
	configs: {
		stdio: { transport: 'stdio', era: '2026-07-28' },
		'stdio-legacy': { transport: 'stdio', era: '2025-11-25', legacy: true },
		http: { transport: 'http', era: '2026-07-28' },
		'http-legacy': { transport: 'http', era: '2025-11-25', legacy: true },
	},
	async open(ctx) {
		const { spec } = ctx;
		const server =
			spec.transport === 'stdio'
				? { ...stdioServer(ctx), env: { PATH: process.env.PATH }, stderr: 'inherit' }
				: { url: new URL(ctx.mcpUrl) };
		if (spec.legacy) server.protocolVersion = 'legacy';
		// MCPClient refuses a second instance with the same servers unless
		// each has an id of its own.
		const mcp = new MCPClient({ id: `nsbox-matrix-${++clients}`, servers: { nsbox: server } });
		let tools;
		try {
			const { toolsets, errors } = await mcp.listToolsetsWithErrors();
			if (errors?.nsbox) throw new Error(`Mastra could not list the tools: ${errors.nsbox}`);
			tools = toolsets.nsbox ?? {};
		} catch (e) {
			await mcp.disconnect().catch(() => {});
			throw e;
		}
		return {
			listTools: async () => Object.keys(tools),
			async checkSchemas(ref) {
				const converted = new Map();
				for (const [name, tool] of Object.entries(tools)) {
					try {
						converted.set(name, await tool.inputSchema['~standard'].jsonSchema.input({ target: 'draft-07' }));
					} catch (e) {
						converted.set(name, e);
					}
				}
				return checkConverted(ref, converted);
			},
			async call(name, args) {
				const tool = tools[name];
				if (!tool) throw new Error(`Mastra built no tool "${name}"`);
				// Mastra validates a model's arguments against the same schema.
				const v = await tool.inputSchema['~standard'].validate(args);
				if (v.issues) throw new Error(`Mastra's schema refuses ${j(args)}: ${j(v.issues)}`);
				// With onToolError "throw" (the default) an isError result throws.
				const out = await tool.execute(args, {});
				const content = getMcpCallToolContent(out);
				if (!Array.isArray(content)) throw new Error(`no MCP content behind Mastra's result: ${j(out)}`);
				return { content, structured: out };
			},
			close: () => mcp.disconnect(),
		};
	},
};
