// One third-party MCP client library against `nsbox serve`, over each
// transport given, with no LLM: the library's own tool listing, its own
// conversion of every tool's schema, and calls through the tools it built
// (or its client, where it builds none), asserted exactly.
//
//   node matrix.mjs CLIENT CONFIG...      e.g. node matrix.mjs aisdk stdio http http-2025 sse
//
// CLIENT names adapters/CLIENT.mjs; a CONFIG is one of its transports
// (stdio, http, sse) or a variant of one (http-2025: the same transport with
// an older protocol pinned).  For each config, cases in this order, one line
// each (tests/lib/nsbox_test.mjs), named clients/CLIENT-CONFIG/CASE:
//   tools_list  the library lists exactly the server's tools (tools/list)
//   schemas     the library converts every tool's schema without an error
//               (a rejection names the tool and the library's message)
//   one_shot    execute_code print("hello from CLIENT-CONFIG"): stdout is
//               exactly that line
//   figure      a matplotlib figure comes back as an image content item,
//               image/png with the PNG signature (in the kept sandbox of
//               stateful; one-shot with savefig where there is none)
//   stateful    sandbox_create, execute_code "x = 41" then "x + 1" in that
//               sandbox: result "42"; sandbox_stop: stopped
//   era         the protocol revision the library negotiated, as recorded
//               on the wire (tap.mjs), is the one the matrix expects
// A case an adapter cannot run (the Inspector's CLI makes one connection
// per call, so nothing is kept between calls) prints a "# ... not
// applicable" line instead; tests/integration/clients.sh knows which.
//
// Environment (tests/integration/clients.sh sets it): NSBOX, NSBOX_STORE,
// NSBOX_IMAGE, MCP_URL (http://127.0.0.1:PORT/mcp of a running `serve
// --http`), SSE_URL (its /sse), REF_DIR (reference.mjs's files: the
// server's own tools/list), WORK (a scratch directory), SUITE.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Check, fail, note, ok, pass, reporter } from '../lib/nsbox_test.mjs';
import { eraOf } from './tap.mjs';
import { errText, j } from './common.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SUITE = reporter().suite;
const need = name => {
	const v = process.env[name];
	if (!v) {
		console.error(`matrix.mjs: ${name} is not set (run through tests/integration/clients.sh)`);
		process.exit(2);
	}
	return v;
};
const ENV = {
	nsbox: need('NSBOX'),
	store: need('NSBOX_STORE'),
	image: need('NSBOX_IMAGE'),
	mcpUrl: need('MCP_URL'),
	sseUrl: need('SSE_URL'),
	work: need('WORK'),
	refDir: need('REF_DIR'),
	tapStdio: path.join(HERE, 'tap-stdio.sh'),
	tapImport: path.join(HERE, 'tap.mjs'),
	here: HERE,
};
const CALL_TIMEOUT_MS = 60000;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function withTimeout(promise, ms, what) {
	let timer;
	return Promise.race([
		promise,
		new Promise((_, rej) => {
			timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
		}),
	]).finally(() => clearTimeout(timer));
}

// The record nsbox returns, from a normalized result: structuredContent if
// the library kept it, else the JSON text item nsbox always sends as well.
function recordOf(res, what) {
	ok(res && typeof res === 'object', () => `${what}: no result: ${j(res)}`);
	ok(!res.isError, () => `${what}: isError: ${j(res.content)}`);
	if (res.structured && typeof res.structured === 'object') return res.structured;
	const text = (res.content || []).find(c => c.type === 'text');
	ok(text, () => `${what}: neither structuredContent nor a text item: ${j(res)}`);
	try {
		return JSON.parse(text.text);
	} catch {
		throw new Check(`${what}: the text item is not nsbox's JSON record: ${j(text.text)}`);
	}
}

// A normalized call result is {content: [MCP content items], structured,
// isError}; each adapter maps its library's shape onto it.
async function call(session, name, args) {
	return withTimeout(session.call(name, args), CALL_TIMEOUT_MS, `${name} ${j(args)}`);
}

const FIGURE_CODE = 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("clients")';
const FIGURE_ONE_SHOT = FIGURE_CODE + '\nplt.savefig("figure.png")';

function checkFigure(res, what) {
	const rec = recordOf(res, what);
	ok(rec.status === 'ok', () => `${what}: status ${j(rec.status)}: ${j(rec.stderr)}`);
	const imgs = (res.content || []).filter(c => c.type === 'image');
	ok(imgs.length === 1, () => `${what}: ${imgs.length} image items, want 1: ${j(res.content)}`);
	ok(imgs[0].mimeType === 'image/png', () => `${what}: image mimeType ${j(imgs[0].mimeType)}`);
	const bytes = Buffer.from(String(imgs[0].data), 'base64');
	ok(bytes.subarray(0, 8).equals(PNG), () => `${what}: image data does not start with the PNG signature: ${bytes.subarray(0, 8).toString('hex')}`);
	return bytes.length;
}

async function runConfig(adapter, config) {
	const name = `${adapter.client}-${config}`;
	const spec = adapter.configs[config];
	const caseName = c => `${name}/${c}`;
	// Notes about a case carry its full name, as its PASS/FAIL line does.
	const caseNote = (c, text) => note(`${SUITE}/${name}/${c}: ${text}`);
	if (!spec) {
		fail(caseName('setup'), `${adapter.client} has no config "${config}" (it has ${Object.keys(adapter.configs).join(', ')})`);
		return;
	}
	const na = spec.notApplicable || {};
	const tapFile = path.join(ENV.work, `${name}.tap`);
	fs.writeFileSync(tapFile, '');
	process.env.NSBOX_TAP_FILE = spec.transport === 'stdio' ? '' : tapFile;
	// The server's list as the matrix expects this client to ask for it.
	const refFile = `tools-${spec.transport === 'stdio' ? 'stdio' : 'http'}-${spec.era === '2026-07-28' ? '2026-07-28' : '2025-11-25'}.json`;
	const ref = JSON.parse(fs.readFileSync(path.join(ENV.refDir, refFile), 'utf8'));
	const t0 = performance.now();
	const ctx = { ...ENV, name, config, spec, tapFile, ref };
	let elapsed;
	const done = (c, err) => {
		if (err) fail(caseName(c), err instanceof Check ? err.message : errText(err));
		else pass(caseName(c));
	};
	for (const [c, why] of Object.entries(na)) caseNote(c, `not applicable: ${why}`);
	let session;
	try {
		session = await withTimeout(adapter.open(ctx), 60000, 'connect');
	} catch (e) {
		for (const c of ['tools_list', 'schemas', 'one_shot', 'figure', 'stateful', 'era'])
			if (!na[c]) fail(caseName(c), `could not connect: ${errText(e)}`);
		return;
	}
	try {
		// tools_list: the same names as the server's tools/list, once each.
		try {
			const names = await withTimeout(session.listTools(), 30000, 'list tools');
			const want = ref.map(t => t.name);
			const extra = names.filter(n => !want.includes(n));
			const missing = want.filter(n => !names.includes(n));
			ok(extra.length === 0 && missing.length === 0 && names.length === want.length,
				() => `the library lists ${names.length} tools, the server ${want.length}; missing ${j(missing)}, extra ${j(extra)}`);
			done('tools_list');
		} catch (e) {
			done('tools_list', e);
		}
		// schemas: the library's conversion of every tool, checked by the
		// adapter against the server's inputSchema.
		try {
			const problems = await withTimeout(session.checkSchemas(ref), 30000, 'schema conversion');
			ok(problems.length === 0, () => problems.map(p => `${p.tool}: ${p.error}`).join('; '));
			done('schemas');
		} catch (e) {
			done('schemas', e);
		}
		// one_shot
		try {
			const want = `hello from ${name}\n`;
			const rec = recordOf(await call(session, 'execute_code', { code: `print("hello from ${name}")` }), 'execute_code');
			ok(rec.status === 'ok' && rec.exit_code === 0, () => `status ${j(rec.status)}, exit ${j(rec.exit_code)}: ${j(rec.stderr)}`);
			ok(rec.stdout === want, () => `stdout ${j(rec.stdout)}, want ${j(want)}`);
			done('one_shot');
		} catch (e) {
			done('one_shot', e);
		}
		if (na.stateful) {
			try {
				const bytes = checkFigure(await call(session, 'execute_code', { code: FIGURE_ONE_SHOT }), 'execute_code (one-shot, savefig)');
				caseNote('figure', `one-shot with savefig (no kept sandbox here), ${bytes} bytes of PNG`);
				done('figure');
			} catch (e) {
				done('figure', e);
			}
		} else {
			await stateful(session, ctx, done, caseNote);
		}
		elapsed = performance.now() - t0;
	} finally {
		try {
			await withTimeout(session.close(), 15000, 'close');
		} catch (e) {
			note(`${name}: close: ${errText(e)}`);
		}
	}
	// era, from the wire, after close (a stdio tap is complete once the
	// server's stdin has ended).
	try {
		const { era, how } = eraOf(spec.transport === 'stdio' ? 'stdio' : 'http', fs.readFileSync(tapFile, 'utf8'));
		caseNote('era', `${era ?? 'unknown'} (${how}); the config took ${Math.round(elapsed ?? performance.now() - t0)} ms`);
		ok(era === spec.era, () => `negotiated ${era ?? 'nothing recognizable'} (${how}), the matrix expects ${spec.era}`);
		done('era');
	} catch (e) {
		done('era', e);
	}
}

// create, x = 41, x + 1 -> "42", the figure in the same sandbox, stop.
async function stateful(session, ctx, done, caseNote) {
	let sid;
	let stage = 'sandbox_create';
	try {
		const created = recordOf(await call(session, 'sandbox_create', { image: ctx.image }), stage);
		sid = created.sandbox_id;
		ok(typeof sid === 'string' && /^[0-9a-f]{32}$/.test(sid), () => `sandbox_create: sandbox_id ${j(sid)}`);
		stage = 'x = 41';
		const r1 = recordOf(await call(session, 'execute_code', { sandbox_id: sid, code: 'x = 41' }), stage);
		ok(r1.status === 'ok' && r1.interpreter === 'persistent', () => `${stage}: ${j(r1)}`);
		stage = 'x + 1';
		const r2 = recordOf(await call(session, 'execute_code', { sandbox_id: sid, code: 'x + 1' }), stage);
		ok(r2.status === 'ok' && r2.result === '42', () => `${stage}: result ${j(r2.result)}, want "42" (status ${j(r2.status)}, stderr ${j(r2.stderr)})`);
	} catch (e) {
		done('figure', new Check(`not run: the kept sandbox failed at ${stage}`));
		done('stateful', e);
		if (sid) await call(session, 'sandbox_stop', { sandbox_id: sid }).catch(() => {});
		return;
	}
	try {
		const bytes = checkFigure(await call(session, 'execute_code', { sandbox_id: sid, code: FIGURE_CODE }), 'execute_code (figure)');
		caseNote('figure', `in the kept sandbox, ${bytes} bytes of PNG`);
		done('figure');
	} catch (e) {
		done('figure', e);
	}
	try {
		const st = recordOf(await call(session, 'sandbox_stop', { sandbox_id: sid }), 'sandbox_stop');
		ok(st.stopped === true && st.sandbox_id === sid, () => `sandbox_stop: ${j(st)}`);
		done('stateful');
	} catch (e) {
		done('stateful', e);
	}
}

async function main() {
	const [client, ...configs] = process.argv.slice(2);
	if (!client || configs.length === 0) {
		console.error('usage: node matrix.mjs CLIENT CONFIG...');
		process.exit(2);
	}
	const adapter = (await import(`./adapters/${client}.mjs`)).default;
	for (const c of configs) await runConfig(adapter, c);
	note(`${client}: done`);
}

// Unhandled errors from a library's background work (a stream that broke,
// a child that died) must not end the run silently: they are reported and
// the run goes on, so every case still gets its line.
process.on('unhandledRejection', e => note(`unhandled rejection: ${errText(e)}`));
process.on('uncaughtException', e => note(`uncaught exception: ${errText(e)}`));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
	await main();
	// Libraries leave sockets and timers behind; the run is over.
	process.exit(0);
}
