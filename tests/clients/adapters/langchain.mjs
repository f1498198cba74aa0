// LangChain: @langchain/mcp-adapters' MultiServerMCPClient, its tools
// (StructuredTool) called as an agent calls them (invoke with a tool call,
// which validates the arguments against the tool's schema and returns a
// ToolMessage), and LangChain's own conversion of each tool for a model
// (convertToOpenAITool, what bindTools uses), plain and strict.
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { checkConverted, stdioServer } from '../common.mjs';

// The MCP content item a LangChain standard content block came from.
function mcpItem(block) {
	if (block.type === 'text') return { type: 'text', text: block.text };
	if (block.type === 'image') return { type: 'image', data: block.data, mimeType: block.mime_type ?? block.mimeType };
	if (block.type === 'file' && block.source_type === 'url') return { type: 'resource_link', uri: block.url, mimeType: block.mime_type };
	return { type: `langchain:${block.type}` };
}

// A ToolMessage's content is an array of standard blocks, or, when the
// tool returned one text item, that block as a JSON string.
function contentOf(msg) {
	let c = msg.content;
	if (typeof c === 'string') {
		try {
			const b = JSON.parse(c);
			c = b && typeof b === 'object' && typeof b.type === 'string' ? [b] : [{ type: 'text', text: c }];
		} catch {
			c = [{ type: 'text', text: c }];
		}
	}
	return c.map(mcpItem);
}

export default {
	client: 'langchain',
	configs: {
		stdio: { transport: 'stdio', era: '2025-11-25' },
		http: { transport: 'http', era: '2025-11-25' },
		sse: { transport: 'sse', era: '2025-11-25' },
	},
	async open(ctx) {
		const server =
			ctx.spec.transport === 'stdio'
				? { transport: 'stdio', ...stdioServer(ctx), stderr: 'inherit' }
				: ctx.spec.transport === 'http'
					? { transport: 'http', url: ctx.mcpUrl, automaticSSEFallback: false }
					: { transport: 'sse', url: ctx.sseUrl };
		const client = new MultiServerMCPClient({
			throwOnLoadError: true,
			useStandardContentBlocks: true,
			onConnectionError: 'throw',
			mcpServers: { nsbox: server },
		});
		const tools = await client.getTools();
		const byName = new Map(tools.map(t => [t.name, t]));
		let n = 0;
		return {
			listTools: async () => tools.map(t => t.name),
			async checkSchemas(ref) {
				const plain = new Map();
				const strict = new Map();
				for (const t of tools) {
					try {
						plain.set(t.name, convertToOpenAITool(t).function.parameters);
					} catch (e) {
						plain.set(t.name, e);
					}
					try {
						strict.set(t.name, convertToOpenAITool(t, { strict: true }).function.parameters);
					} catch (e) {
						strict.set(t.name, e);
					}
				}
				return [
					...checkConverted(ref, plain),
					...checkConverted(ref, strict).map(p => ({ ...p, error: `strict: ${p.error}` })),
				];
			},
			async call(name, args) {
				const tool = byName.get(name);
				if (!tool) throw new Error(`LangChain built no tool "${name}"`);
				const msg = await tool.invoke({ name, args, id: `call-${++n}`, type: 'tool_call' });
				const structured = (msg.artifact || []).find(a => a.type === 'mcp_structured_content')?.data;
				return { content: contentOf(msg), structured, isError: msg.status === 'error' };
			},
			close: () => client.close(),
		};
	},
};
