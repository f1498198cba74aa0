// The OpenAI Agents SDK: @openai/agents' MCPServerStdio,
// MCPServerStreamableHttp and MCPServerSSE, their tools converted as an
// Agent converts them with strict schemas (getAllMcpTools with
// convertSchemasToStrict: true), and each FunctionTool's invoke() with the
// JSON arguments a model would send.
import { MCPServerSSE, MCPServerStdio, MCPServerStreamableHttp, RunContext, getAllMcpTools, mcpToFunctionTool } from '@openai/agents';
import { checkConverted, errText, j, stdioServer } from '../common.mjs';

// When a schema cannot be made strict the SDK does not throw: it logs
// "Error converting MCP schema to strict mode:" with the error (only its
// type unless OPENAI_AGENTS_DONT_LOG_TOOL_DATA=0) and builds a non-strict
// tool.  strictError converts one tool alone and returns that error, or null.
process.env.OPENAI_AGENTS_DONT_LOG_TOOL_DATA = '0';
function strictError(mcpTool, server) {
	const logged = [];
	const warn = console.warn;
	console.warn = (...args) => logged.push(args);
	let fn;
	try {
		fn = mcpToFunctionTool(mcpTool, server, true);
	} catch (e) {
		return e;
	} finally {
		console.warn = warn;
	}
	if (fn.strict === true) return null;
	const why = logged.map(a => a.map(x => (x instanceof Error ? errText(x) : String(x))).join(' ')).join('; ');
	const open = openObjects(mcpTool.inputSchema);
	return new Error(`${why || 'the SDK built a non-strict tool and logged nothing'}${open.length ? ` [open objects in the inputSchema: ${open.join(', ')}]` : ''}`);
}

// The paths of the objects in a schema that take properties it does not
// name (additionalProperties not false): what strict mode cannot express.
function openObjects(schema, at = '') {
	if (!schema || typeof schema !== 'object') return [];
	const here = schema.type === 'object' && at && schema.additionalProperties !== false ? [`${at} ${j({ additionalProperties: schema.additionalProperties ?? true })}`] : [];
	const props = Object.entries(schema.properties || {}).flatMap(([k, v]) => openObjects(v, at ? `${at}.${k}` : k));
	const items = schema.items ? openObjects(schema.items, `${at}[]`) : [];
	return [...here, ...props, ...items];
}

// invoke() returns what goes back to the model: a string, or structured
// output items ({type: 'text', text} / {type: 'image', image: {data,
// mediaType}} or a data URL).
function mcpItems(out) {
	if (typeof out === 'string') {
		try {
			const v = JSON.parse(out);
			if (Array.isArray(v)) return v.flatMap(mcpItems);
			if (v && typeof v === 'object' && typeof v.type === 'string') return mcpItems(v);
		} catch {
			/* a plain string */
		}
		return [{ type: 'text', text: out }];
	}
	if (Array.isArray(out)) return out.flatMap(mcpItems);
	if (out && out.type === 'text') return [{ type: 'text', text: out.text }];
	if (out && out.type === 'image') {
		const img = out.image ?? out;
		if (typeof img === 'string' && img.startsWith('data:')) {
			const [, mime, data] = /^data:([^;]+);base64,(.*)$/s.exec(img) || [];
			return [{ type: 'image', mimeType: mime, data }];
		}
		if (typeof img.data === 'string' && !img.data.startsWith('data:'))
			return [{ type: 'image', mimeType: img.mediaType ?? img.mimeType ?? out.mimeType, data: img.data }];
		const url = img.data ?? img.url ?? out.imageUrl;
		const [, mime, data] = /^data:([^;]+);base64,(.*)$/s.exec(String(url)) || [];
		return [{ type: 'image', mimeType: mime, data }];
	}
	return [{ type: `agents:${j(out)}` }];
}

export default {
	client: 'agents',
	configs: {
		stdio: { transport: 'stdio', era: '2026-07-28' },
		http: { transport: 'http', era: '2026-07-28' },
		sse: { transport: 'sse', era: '2025-11-25' },
	},
	async open(ctx) {
		const { spec } = ctx;
		const server =
			spec.transport === 'stdio'
				? new MCPServerStdio({ name: 'nsbox', ...stdioServer(ctx), env: { PATH: process.env.PATH } })
				: spec.transport === 'http'
					? new MCPServerStreamableHttp({ name: 'nsbox', url: ctx.mcpUrl })
					: new MCPServerSSE({ name: 'nsbox', url: ctx.sseUrl });
		await server.connect();
		const runContext = new RunContext({});
		let tools, listed;
		const warn = console.warn;
		try {
			// (its warnings are strictError's to report, per tool)
			console.warn = () => {};
			tools = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: true, runContext });
			listed = await server.listTools();
		} catch (e) {
			await server.close().catch(() => {});
			throw e;
		} finally {
			console.warn = warn;
		}
		const byName = new Map(tools.map(t => [t.name, t]));
		return {
			listTools: async () => tools.map(t => t.name),
			async checkSchemas(ref) {
				const converted = new Map();
				for (const t of tools) {
					const mcpTool = listed.find(m => m.name === t.name);
					const err = t.strict === true ? null : mcpTool ? strictError(mcpTool, server) : new Error('not strict, and not in listTools()');
					converted.set(t.name, err ?? t.parameters);
				}
				return checkConverted(ref, converted, { strict: true });
			},
			async call(name, args) {
				const tool = byName.get(name);
				if (!tool) throw new Error(`the Agents SDK built no tool "${name}"`);
				const out = await tool.invoke(runContext, JSON.stringify(args));
				return { content: mcpItems(out) };
			},
			close: () => server.close(),
		};
	},
};
