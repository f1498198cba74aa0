// The MCP Inspector's CLI (@modelcontextprotocol/inspector, `inspector
// --cli`): one process per method, as a script or a person runs it, with
// --format json.  Its schemas case is its own portability check on the tool
// list (--strict: every problem in full on stderr, exit 6 on an error).
// Each invocation connects anew (a new server over stdio, a new session over
// HTTP or SSE), and a sandbox belongs to the session that made it, so the
// stateful pair can only run where sandboxes outlive the connection: the
// 2026-07-28 wire over HTTP (--protocol-era auto), whose sandboxes belong to
// the tenant.  Elsewhere the figure is a one-shot run with savefig.  It runs
// as its own process: the wire tap is loaded into it with `node --import`.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { j, stdioServer } from '../common.mjs';

const ONE_CONNECTION =
	'the CLI makes one connection per call (a new server process over stdio, a new session over HTTP and SSE) and a sandbox belongs to the session that made it';

export default {
	client: 'inspector',
	configs: {
		stdio: { transport: 'stdio', era: '2025-11-25', notApplicable: { stateful: ONE_CONNECTION } },
		http: { transport: 'http', era: '2025-11-25', notApplicable: { stateful: ONE_CONNECTION } },
		sse: { transport: 'sse', era: '2025-11-25', notApplicable: { stateful: ONE_CONNECTION } },
		'http-auto': { transport: 'http', era: '2026-07-28', args: ['--protocol-era', 'auto'] },
	},
	async open(ctx) {
		const { spec } = ctx;
		const bin = path.join(ctx.here, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
		const home = path.join(ctx.work, `${ctx.name}.home`);
		fs.mkdirSync(home, { recursive: true });
		const target =
			spec.transport === 'stdio'
				? ['--', stdioServer(ctx).command, ...stdioServer(ctx).args]
				: [spec.transport === 'http' ? ctx.mcpUrl : ctx.sseUrl];
		let n = 0;
		// run(args): {code, stdout, stderr} of one CLI invocation.
		const run = args =>
			new Promise(resolve => {
				const argv = [bin, '--cli', ...(spec.args || []), ...args, '--format', 'json', ...target];
				execFile(
					process.execPath,
					argv,
					{
						env: {
							PATH: process.env.PATH,
							HOME: home,
							NODE_OPTIONS: `--import=${ctx.tapImport}`,
							NSBOX_TAP_FILE: ctx.tapFile,
						},
						maxBuffer: 64 << 20,
						timeout: 60000,
					},
					(err, stdout, stderr) => {
						fs.writeFileSync(path.join(ctx.work, `${ctx.name}.${++n}.stderr`), stderr);
						resolve({ code: err ? (err.code ?? err.signal) : 0, stdout, stderr });
					},
				);
			});
		const result = r => {
			let out;
			try {
				out = JSON.parse(r.stdout);
			} catch {
				throw new Error(`the CLI exited ${r.code} without a JSON result: ${r.stdout.slice(0, 200)} ${r.stderr.slice(-300)}`);
			}
			if (r.code !== 0 || !out.result) throw new Error(`the CLI exited ${r.code}: ${j(out)} ${r.stderr.slice(-300)}`);
			return out.result;
		};
		let listing;
		const list = async () => (listing ??= await run(['--method', 'tools/list', '--strict']));
		return {
			async listTools() {
				return result(await list()).tools.map(t => t.name);
			},
			async checkSchemas() {
				const r = await list();
				// --strict prints each problem as "Error: tool "NAME"" or
				// "Warning: ..." followed by Path, Issue and Suggestion lines.
				const problems = [];
				const blocks = r.stderr.split(/\n(?=(?:Error|Warning): )/);
				for (const b of blocks) {
					const m = /^Error: tool "([^"]+)"([\s\S]*)$/.exec(b.trim());
					if (m) problems.push({ tool: m[1], error: m[2].replace(/\s+/g, ' ').trim() });
				}
				if (r.code !== 0 && problems.length === 0)
					problems.push({ tool: '(all)', error: `tools/list --strict exited ${r.code}: ${r.stderr.slice(-300)}` });
				return problems;
			},
			async call(name, args) {
				const r = result(await run(['--method', 'tools/call', '--tool-name', name, '--tool-args-json', JSON.stringify(args)]));
				return { content: r.content, structured: r.structuredContent, isError: r.isError };
			},
			close: async () => {},
		};
	},
};
