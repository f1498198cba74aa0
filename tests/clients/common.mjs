// Helpers shared by matrix.mjs and the adapters (adapters/*.mjs).

// j(v): a short JSON rendering for messages.
export const j = v => {
	const s = JSON.stringify(v, (k, x) => (typeof x === 'string' && x.length > 120 ? x.slice(0, 120) + '...' : x));
	return s === undefined ? String(v) : s.length > 400 ? s.slice(0, 400) + '...' : s;
};

export const errText = e => {
	if (!(e instanceof Error)) return String(e);
	const cause = e.cause instanceof Error ? ` (cause: ${e.cause.message})` : '';
	return `${e.constructor.name}: ${e.message}${cause}`;
};

// checkConverted(ref, converted, lib): the common part of the schemas case.
// converted maps a tool name to the JSON Schema the library made of it (or
// an Error it threw); each must exist, be an object schema, and keep every
// property of the server's inputSchema and its required list (a strict
// conversion may add to required: every property must then be there).
export function checkConverted(ref, converted, { strict = false } = {}) {
	const problems = [];
	for (const tool of ref) {
		const got = converted.get(tool.name);
		if (got === undefined) {
			problems.push({ tool: tool.name, error: 'not converted (missing from what the library built)' });
			continue;
		}
		if (got instanceof Error) {
			problems.push({ tool: tool.name, error: errText(got) });
			continue;
		}
		const want = tool.inputSchema;
		const props = Object.keys(want.properties || {});
		const gotProps = Object.keys(got?.properties || {});
		const lost = props.filter(p => !gotProps.includes(p));
		if (got?.type !== 'object' || lost.length)
			problems.push({ tool: tool.name, error: `converted schema ${j(got)} lost ${j(lost)}` });
		const req = got?.required || [];
		const lostReq = (want.required || []).filter(r => !req.includes(r));
		if (lostReq.length) problems.push({ tool: tool.name, error: `converted schema dropped required ${j(lostReq)}` });
		if (strict) {
			const notReq = props.filter(p => !req.includes(p));
			if (notReq.length || got.additionalProperties !== false)
				problems.push({ tool: tool.name, error: `strict schema leaves ${j(notReq)} optional or additionalProperties ${j(got.additionalProperties)}` });
		}
	}
	return problems;
}

// The command line of a stdio server, through the wire tap.  Clients give a
// stdio server only a few variables (the official SDK: HOME, LOGNAME, PATH,
// SHELL, TERM, USER); the sanitizer settings of `make test-asan` must reach
// nsbox all the same, or a report would go to a stderr nobody reads:
// tap-stdio.sh sets them (VAR=VALUE words before the command), and
// NSBOX_CLIENT_MATRIX=WORK, by which the suite finds a server that outlives
// its client.
const PASS_ENV = ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'];
export const stdioServer = ctx => ({
	command: ctx.tapStdio,
	args: [
		ctx.tapFile,
		`NSBOX_CLIENT_MATRIX=${ctx.work}`,
		...PASS_ENV.filter(k => process.env[k]).map(k => `${k}=${process.env[k]}`),
		ctx.nsbox,
		'--store',
		ctx.store,
		'serve',
		'--image',
		`python=${ctx.image}`,
	],
});
