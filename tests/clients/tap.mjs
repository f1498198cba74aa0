// What an MCP client sends, recorded passively so the suite can say which
// protocol era the client negotiated (tests/integration/clients.sh).
//
// HTTP: every request any undici in the process sends (Node's own fetch and
// the npm package alike publish the request head on the diagnostics channel
// `undici:client:sendHeaders`) is appended to $NSBOX_TAP_FILE as one JSON
// line: {method, path, version (MCP-Protocol-Version), mcp_method
// (Mcp-Method), session (an Mcp-Session-Id was sent)}.  Nothing is changed
// or delayed.  Loaded in the driver itself, and with `node --import` into
// the clients that run as their own processes (mcp-remote, the Inspector).
//
// stdio: tap-stdio.sh copies what the client writes to the server's stdin
// into a file; eraOf() reads either kind.
import dc from 'node:diagnostics_channel';
import fs from 'node:fs';

function record(head) {
	const file = process.env.NSBOX_TAP_FILE;
	if (!file) return;
	const lines = String(head).split('\r\n');
	const [method, path] = lines[0].split(' ');
	const h = {};
	for (const l of lines.slice(1)) {
		const i = l.indexOf(':');
		if (i > 0) h[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
	}
	const rec = {
		method,
		path,
		version: h['mcp-protocol-version'] ?? null,
		mcp_method: h['mcp-method'] ?? null,
		session: 'mcp-session-id' in h,
	};
	fs.appendFileSync(file, JSON.stringify(rec) + '\n');
}

dc.subscribe('undici:client:sendHeaders', ({ headers }) => record(headers));

const MODERN = '2026-07-28';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';

// eraOf(kind, text): the era the recorded requests show, as
// {era: '2026-07-28' | '2025-11-25' | ..., how: 'a few words'}, or
// {era: null, how: why not}.  kind 'http': tap records; 'stdio': the
// JSON-RPC lines the client wrote.
export function eraOf(kind, text) {
	const lines = text.split('\n').filter(Boolean);
	if (kind === 'stdio') {
		const msgs = [];
		for (const l of lines) {
			try {
				msgs.push(JSON.parse(l));
			} catch {
				return { era: null, how: `the client wrote a line that is not JSON: ${l.slice(0, 80)}` };
			}
		}
		const calls = msgs.filter(m => m.method === 'tools/call');
		if (calls.length === 0) return { era: null, how: 'no tools/call was sent' };
		const versions = new Set(calls.map(m => m.params?._meta?.[META_VERSION] ?? null));
		const init = msgs.find(m => m.method === 'initialize');
		const first = msgs.find(m => m.method)?.method;
		const keys = [...new Set(calls.flatMap(m => Object.keys(m.params?._meta ?? {})))].sort();
		const meta = keys.length ? `; tools/call _meta keys: ${keys.join(', ')}` : '';
		if (versions.size === 1 && versions.has(MODERN))
			return { era: MODERN, how: `every tools/call with _meta ${META_VERSION}; first request ${first}${init ? ', initialize too' : ''}${meta}` };
		if (versions.size === 1 && versions.has(null) && init)
			return { era: String(init.params?.protocolVersion), how: `initialize first (first request ${first}), tools/call without per-request version${meta}` };
		return { era: null, how: `mixed: tools/call versions ${[...versions].join(', ')}, initialize ${init ? init.params?.protocolVersion : 'none'}` };
	}
	const recs = lines.map(l => JSON.parse(l)).filter(r => r.method === 'POST');
	if (recs.length === 0) return { era: null, how: 'no POST was recorded' };
	const where = recs[0].path.startsWith('/messages') ? 'legacy SSE' : 'Streamable HTTP';
	const versions = [...new Set(recs.map(r => r.version))];
	if (versions.length === 1 && versions[0] === MODERN)
		return { era: MODERN, how: `${where}: every POST with MCP-Protocol-Version ${MODERN}, first ${recs[0].mcp_method ?? '(no Mcp-Method)'}, ${recs.some(r => r.session) ? 'with' : 'no'} session` };
	const named = versions.filter(v => v !== null);
	const bare = recs.filter(r => r.version === null).length;
	if (named.length === 1 && named[0] !== MODERN)
		return { era: named[0], how: `${where}: MCP-Protocol-Version ${named[0]} on ${recs.length - bare} of ${recs.length} POSTs${bare ? ` (none on ${bare}: initialize)` : ''}${recs.some(r => r.session) ? ', in a session' : ''}` };
	return { era: null, how: `${where}: mixed MCP-Protocol-Version values ${versions.join(', ')}` };
}
