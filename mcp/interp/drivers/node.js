// nsbox's JavaScript/TypeScript driver: a persistent interpreter for
// execute_code in a kept sandbox.  Started as `node /.nsbox/drivers/node.js`
// (or with `--typescript`) with fd 0 = the driver channel (a stream socket),
// fd 1/2 = the code's output pipes.  docs/interpreters.md is the contract.
// Node >= 18, no npm dependencies.  `--stdio-test` (tests only): the
// protocol on stdin/stdout instead of fd 0, mixed with the code's output.
//
// A cell is evaluated as Chrome's console does: V8's REPL mode, through an
// inspector session to this very process (Runtime.evaluate, replMode), in
// this context.  So: top-level await, the completion value (also after an
// await), and top-level let/const/class that a later cell may declare
// again.  ESM import/export statements and import() are rewritten first
// (node_imports.js, beside this file: a small tokenizer) into awaits of the
// driver's import, which resolves from the working directory.  The cells
// can clobber any global; the driver keeps what it needs in this module's
// scope (node_imports.js in its own, loaded before any cell).  Without an
// inspector (a Node built without one) a cell is vm.runInThisContext, as
// before: no top-level await, no import statements.
'use strict';
// The globals the driver uses, as they are now: a cell's top-level
// `const JSON = ...` is seen by every script, the driver's code too.
const G = globalThis;
const { Array, BigInt, Buffer, Error, JSON, Number, Object, Promise, Set, String, Symbol, SyntaxError, TypeError, process } = G;
const childProcess = require('child_process');
const fs = require('fs');
const Module = require('module');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');

const RESULT_CAP = 64 * 1024;
const MESSAGE_CAP = 64 * 1024;
const TRACEBACK_CAP = 64 * 1024;
const JSON_CAP = 1024 * 1024;
const typescriptMode = process.argv.includes('--typescript');
const stdioTest = process.argv.includes('--stdio-test');
const INTERRUPTED = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
// The ESM half, by its absolute path: never the working directory's file
// of that name nor one the cell's require would find.
const IMPORTS_FILE = path.join(__dirname, 'node_imports.js');
const { rewriteModuleSyntax, defineImport } = require(IMPORTS_FILE);

// Valid UTF-8 without NUL (the host's JSON parser is strict), at most cap
// bytes, with a marker when cut.
function clean(text, cap) {
	// A Buffer encodes a lone surrogate as U+FFFD: JSON.stringify would
	// escape it as \udXXX, which a strict parser rejects.
	const data = Buffer.from(String(text).replace(/\0/g, '\\x00'), 'utf8');
	if (data.length <= cap) return data.toString('utf8');
	const marker = `\n... [truncated: ${data.length} bytes in all]`;
	// Cutting may split a character; the decoder turns the stump into U+FFFD.
	return data.subarray(0, cap - Buffer.byteLength(marker) - 3).toString('utf8') + marker;
}

// Node has no dup(): a short-lived child gets the channel as its fd 3 and
// sends it back over the IPC channel (SCM_RIGHTS), which gives this process
// a private close-on-exec copy.  Then fd 0 is closed and /dev/null takes its
// place, so the code's reads of stdin and its children see EOF and a write
// to fd 0 goes nowhere.  Calls back with the channel as a net.Socket.
function takeChannel(callback) {
	let child;
	let settled = false;
	const fallback = () => {
		// The channel stays on fd 0 if the copy cannot be made (no process
		// to spare, say): everything works but stdin is the channel.
		if (!settled) {
			settled = true;
			if (child) child.kill('SIGKILL');
			callback(new net.Socket({ fd: 0, readable: true, writable: true }));
		}
	};
	try {
		const sender = "const s = new (require('net').Socket)({fd: 3}); process.send('chan', s, () => process.exit(0));";
		child = childProcess.spawn(process.execPath, ['-e', sender], {
			stdio: ['ignore', 'ignore', 'ignore', 0, 'ipc'],
		});
	} catch {
		return fallback();
	}
	child.on('error', fallback);
	// The IPC channel closes after its last message is read.
	child.on('disconnect', fallback);
	child.on('message', (msg, handle) => {
		if (settled || msg !== 'chan' || !handle) return;
		settled = true;
		fs.closeSync(0);
		const fd = fs.openSync('/dev/null', 'r+');
		if (fd !== 0) fs.closeSync(fd); // fd 0 was taken meanwhile: leave it
		child.disconnect();
		callback(handle);
	});
}

// ---- TypeScript --------------------------------------------------------

// The TypeScript compiler: the one the code's own require would find, else
// the system's (Debian's node-typescript lives in /usr/share/nodejs, which a
// Node not built by Debian does not search).
function loadTypescript() {
	const candidates = [
		() => Module.createRequire(path.join(process.cwd(), 'cell.js'))('typescript'),
		() => require('typescript'),
	];
	for (const dir of ['/usr/share/nodejs', '/usr/lib/nodejs', '/usr/local/lib/node_modules', '/usr/lib/node_modules'])
		candidates.push(() => require(path.join(dir, 'typescript')));
	for (const load of candidates) {
		try {
			return { ts: load() };
		} catch {
			// not there: the next place
		}
	}
	return { error: 'the typescript module is not installed (tried require.resolve from the working directory, /usr/share/nodejs, /usr/lib/nodejs, /usr/local/lib/node_modules, /usr/lib/node_modules)' };
}

// transpileModule builds a type checker per call: megabytes of garbage
// that V8 keeps as heap (RSS 90 MiB at start, 230 after 3,000 cells, 136
// with a full collection every 20).  Node only exposes gc() with a flag;
// setting it now gives a gc() in a new context, not in the code's globals.
function collector() {
	try {
		require('v8').setFlagsFromString('--expose-gc');
		const gc = vm.runInNewContext('gc');
		return typeof gc === 'function' ? gc : null;
	} catch {
		return null;
	}
}

// ES modules out (the import statements stay, for rewriteModuleSyntax),
// every value import kept even if this cell does not use it (a later one
// may): verbatimModuleSyntax from TypeScript 5, preserveValueImports before.
// Without REPL mode (no inspector): CommonJS, for vm.runInThisContext.
function transpile(ts, code, filename, replMode) {
	const options = { target: ts.ScriptTarget.ES2020, esModuleInterop: true, sourceMap: false };
	if (replMode) {
		options.target = ts.ScriptTarget.ES2022 || ts.ScriptTarget.ES2020;
		options.module = ts.ModuleKind.ESNext;
		if (Number(ts.versionMajorMinor.split('.')[0]) >= 5) options.verbatimModuleSyntax = true;
		else options.preserveValueImports = true;
	} else {
		options.module = ts.ModuleKind.CommonJS;
	}
	const out = ts.transpileModule(code, {
		fileName: filename + '.ts',
		reportDiagnostics: true,
		compilerOptions: options,
	});
	const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
	if (errors.length) {
		const err = new SyntaxError(errors.map((d) => describeDiagnostic(ts, d, filename)).join('\n'));
		err.stack = `${err.name}: ${err.message}`;
		throw err;
	}
	return out.outputText;
}

function describeDiagnostic(ts, d, filename) {
	const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
	if (!d.file || d.start === undefined) return `error TS${d.code}: ${text}`;
	const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
	return `${filename}(${line + 1},${character + 1}): error TS${d.code}: ${text}`;
}

// ---- evaluation ----------------------------------------------------------

// Runs fn() as a vm script with breakOnSigint, so that a SIGINT stops a
// synchronous loop of the cell anywhere below it (vm then throws
// ERR_SCRIPT_EXECUTION_INTERRUPTED).
const sigintKey = `__nsbox_sigint_${process.pid}_${Math.random().toString(36).slice(2)}`;
const sigintScript = new vm.Script(`this[${JSON.stringify(sigintKey)}]()`, { filename: 'nsbox-driver' });
function underSigint(fn) {
	Object.defineProperty(G, sigintKey, { value: fn, configurable: true });
	try {
		return sigintScript.runInThisContext({ breakOnSigint: true });
	} finally {
		delete G[sigintKey];
	}
}

// The inspector session, and a handle to taker (a RemoteObject id), got
// before any cell runs: valueOf calls it with the value, without looking
// up a name a cell could have shadowed.
let taken;
const taker = (v) => (taken = v);
function openSession() {
	try {
		const inspector = require('inspector');
		const session = new inspector.Session();
		session.connect();
		const key = `${sigintKey}_taker`;
		Object.defineProperty(G, key, { value: taker, configurable: true });
		const res = post(session, 'Runtime.evaluate', { expression: `this[${JSON.stringify(key)}]`, objectGroup: 'nsbox-driver' });
		delete G[key];
		if (!res.result || !res.result.objectId) return null;
		return { session, taker: res.result.objectId };
	} catch {
		return null;
	}
}

// A synchronous inspector method's answer.
function post(session, method, params) {
	let answer = null;
	session.post(method, params, (err, res) => (answer = { err, res }));
	if (!answer) throw new Error(`inspector: ${method} did not answer`);
	if (answer.err) throw answer.err;
	return answer.res;
}

// The JavaScript value a RemoteObject stands for.
function valueOf(repl, remote) {
	if (!remote || remote.type === 'undefined') return undefined;
	if (remote.objectId) {
		taken = undefined;
		post(repl.session, 'Runtime.callFunctionOn', {
			objectId: repl.taker,
			functionDeclaration: 'function (v) { this(v) }',
			arguments: [{ objectId: remote.objectId }],
			silent: true,
		});
		const value = taken;
		taken = undefined;
		return value;
	}
	if ('unserializableValue' in remote) {
		const u = remote.unserializableValue;
		return u.endsWith('n') ? BigInt(u.slice(0, -1)) : u === '-0' ? -0 : Number(u);
	}
	return remote.value;
}

// Evaluates in REPL mode: {value} or {thrown}; rejects (interrupted) when a
// SIGINT stops the synchronous part.  onPending gets a function that gives
// up the wait (the evaluation goes on: an inspector call cannot be stopped).
function replEvaluate(repl, code, filename, onPending) {
	return new Promise((resolve, reject) => {
		let settled = false;
		const finish = (f) => (x) => {
			if (!settled) {
				settled = true;
				f(x);
			}
		};
		const answer = finish((res) => {
			try {
				if (res.exceptionDetails) resolve({ thrown: valueOf(repl, res.exceptionDetails.exception), details: res.exceptionDetails });
				else resolve({ value: valueOf(repl, res.result) });
			} catch (err) {
				reject(err);
			}
		});
		const params = { expression: `${code}\n//# sourceURL=${filename}`, replMode: true, objectGroup: 'nsbox-cell', silent: false };
		try {
			underSigint(() => repl.session.post('Runtime.evaluate', params, (err, res) => (err ? finish(reject)(err) : answer(res))));
		} catch (err) {
			finish(reject)(err);
		}
		if (!settled) onPending(finish(reject));
	});
}

// A SyntaxError of the cell as Node prints one: where, the line, a caret.
function syntaxErrorStack(err, details, code, filename) {
	const line = code.split('\n')[details.lineNumber];
	if (line === undefined) return `${err.name}: ${err.message}`;
	const caret = ' '.repeat(Math.max(0, details.columnNumber)) + '^';
	return `${filename}:${details.lineNumber + 1}\n${line}\n${caret}\n\n${err.name}: ${err.message}`;
}

// ---- results and errors -------------------------------------------------

const NOT_JSON = Symbol('not JSON');
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

// value as JSON when it is plain data (null, booleans, finite numbers,
// strings without NUL, arrays and plain objects of them, no cycles), with
// lone surrogates as U+FFFD; else NOT_JSON.
function plainJson(value) {
	let budget = 100000;
	const seen = new Set();
	const walk = (v) => {
		if (--budget < 0) return NOT_JSON;
		if (v === null || typeof v === 'boolean') return v;
		if (typeof v === 'number') return Number.isFinite(v) ? v : NOT_JSON;
		if (typeof v === 'string') return v.includes('\0') ? NOT_JSON : v.replace(LONE_SURROGATE, '\uFFFD');
		if (typeof v !== 'object' || seen.has(v) || util.types.isProxy(v)) return NOT_JSON;
		const proto = Object.getPrototypeOf(v);
		const array = Array.isArray(v) && proto === Array.prototype;
		if (!array && proto !== Object.prototype && proto !== null) return NOT_JSON;
		seen.add(v);
		let out;
		if (array) {
			out = [];
			for (let i = 0; i < v.length; i++) {
				const x = walk(Object.getOwnPropertyDescriptor(v, i) ? v[i] : null);
				if (x === NOT_JSON) return NOT_JSON;
				out.push(x === undefined ? null : x);
			}
		} else {
			out = {};
			for (const k of Object.keys(v)) {
				const d = Object.getOwnPropertyDescriptor(v, k);
				if (!d || !('value' in d) || k.includes('\0')) return NOT_JSON;
				if (d.value === undefined || typeof d.value === 'function') continue;
				const x = walk(d.value);
				if (x === NOT_JSON) return NOT_JSON;
				out[k.replace(LONE_SURROGATE, '\uFFFD')] = x;
			}
		}
		seen.delete(v);
		return out;
	};
	try {
		const out = walk(value);
		return out !== NOT_JSON && Buffer.byteLength(JSON.stringify(out)) <= JSON_CAP ? out : NOT_JSON;
	} catch {
		return NOT_JSON;
	}
}

// E2B's rule for a result's text (template/server/api/models/result.py):
// a text that starts and ends with the same quote, ' or ", loses both, so a
// string reads as itself ('bar' is bar).  done.result keeps the inspect.
function e2bText(text) {
	const q = text.length >= 2 ? text[0] : '';
	return (q === "'" || q === '"') && text[text.length - 1] === q ? text.slice(1, -1) : text;
}

function mainResult(value, text) {
	const bundle = { text: e2bText(text) };
	const json = plainJson(value);
	if (json !== NOT_JSON) bundle.json = json;
	bundle.is_main_result = true;
	return bundle;
}

// The stack as Node would print it, without the driver's frames.
function stackOf(err) {
	let stack;
	try {
		stack = err instanceof Error && typeof err.stack === 'string' ? err.stack : null;
	} catch {
		stack = null;
	}
	if (stack === null) return `Uncaught ${util.inspect(err)}`;
	// Everything from the first frame of vm, the inspector or the driver
	// (node.js, node_imports.js) on is ours; frames of Node's own modules
	// that the cell called stay.
	const lines = stack.split('\n');
	const ours = lines.findIndex((l) => /^\s+at /.test(l) && (l.includes(__filename) || l.includes(IMPORTS_FILE) || /\((node:vm|node:inspector):|nsbox-driver:/.test(l)));
	return (ours < 0 ? lines : lines.slice(0, ours)).join('\n');
}

function errorOf(err, traceback) {
	let type;
	let message;
	try {
		if (err instanceof Error) {
			type = err.name || err.constructor.name;
			message = err.message;
		} else {
			type = typeof err;
			message = util.inspect(err);
		}
	} catch {
		type = 'Error';
		message = 'the thrown value could not be described';
	}
	type = clean(String(type), 1024);
	message = clean(String(message), MESSAGE_CAP);
	return { type, message, name: type, value: message, traceback: clean(traceback, TRACEBACK_CAP) };
}

// A thrown value with the traceback to show for it.
class Described {
	constructor(err, traceback) {
		this.err = err;
		this.traceback = traceback;
	}
}

// What a cell threw, for `done` and stderr.  Anything may have been thrown
// (a Proxy whose every trap throws, say): this never throws.
function failure(caught) {
	try {
		const described = caught instanceof Described;
		const err = described ? caught.err : caught;
		const traceback = described ? caught.traceback : stackOf(err);
		return { traceback, error: errorOf(err, traceback), interrupted: err instanceof Error && err.code === INTERRUPTED };
	} catch {
		const traceback = 'Uncaught: a thrown value that cannot be described';
		return { traceback, error: errorOf(new Error(traceback), traceback), interrupted: false };
	}
}

// ---- the cell's environment ------------------------------------------

// Sets run.env in process.env; returns what puts every name back.
function applyEnv(env) {
	const saved = [];
	if (env && typeof env === 'object' && !Array.isArray(env)) {
		for (const [k, v] of Object.entries(env)) {
			if (typeof v !== 'string' || !k || /[=\0]/.test(k) || v.includes('\0')) continue;
			saved.push([k, Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined]);
			process.env[k] = v;
		}
	}
	return () => {
		for (const [k, old] of saved.reverse()) {
			if (old === undefined) delete process.env[k];
			else process.env[k] = old;
		}
	};
}

// ---- the driver -----------------------------------------------------------

// Globals a CommonJS module would have, from the working directory.
function setModuleGlobals(cwd) {
	const filename = path.join(cwd, '[cell]');
	const mod = new Module(filename, null);
	mod.filename = filename;
	mod.paths = Module._nodeModulePaths(cwd);
	G.require = Module.createRequire(filename);
	G.module = mod;
	G.exports = mod.exports;
	G.__dirname = cwd;
	G.__filename = filename;
	return G.require;
}

const isThenable = (v) => v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';

function main() {
	let ts = null;
	let tsError = null;
	if (typescriptMode) {
		const loaded = loadTypescript();
		ts = loaded.ts || null;
		tsError = loaded.error || null;
	}
	const gc = ts ? collector() : null;
	const repl = openSession();
	if (repl) defineImport();
	let cwd = process.cwd();
	let ourRequire = setModuleGlobals(cwd);
	let cell = 0;
	let interruptAwait = null; // gives up the awaited completion on SIGINT

	// SIGINT between cells (the host's timeout racing `done`) must not kill
	// the interpreter; during an await it abandons the wait.
	process.on('SIGINT', () => {
		if (interruptAwait) interruptAwait(Object.assign(new Error('Script execution was interrupted by `SIGINT`'), { code: INTERRUPTED }));
	});
	// Errors of background work are the code's, not fatal: print them as Node
	// would and keep the state.
	process.on('uncaughtException', (err) => process.stderr.write(`Uncaught ${stackOf(err)}\n`));
	process.on('unhandledRejection', (err) => process.stderr.write(`Uncaught (in promise) ${stackOf(err)}\n`));

	const pending = (giveUp) => (interruptAwait = giveUp);

	// {value: the cell's completion value} (boxed: an async function would
	// wait for a promise it returns); throws what the cell threw, with the
	// traceback of a syntax error as Node prints it.
	async function evaluate(js, filename) {
		if (!repl) return { value: vm.runInThisContext(js, { filename, breakOnSigint: true }) };
		const out = await replEvaluate(repl, js, filename, pending);
		if (!('thrown' in out)) return out;
		const err = out.thrown;
		const frames = typeof (err && err.stack) === 'string' && err.stack.includes(`at ${filename}:`);
		if (err instanceof SyntaxError && !frames && out.details.lineNumber !== undefined)
			throw new Described(err, syntaxErrorStack(err, out.details, js, filename));
		throw err;
	}

	async function runCell(code, env) {
		cell += 1;
		const filename = `cell-${cell}`;
		const done = { op: 'done', status: 'ok', result: null, error: null, interrupted: false, figures: [], execution_count: cell, results: [] };
		// The code's require follows its chdir unless the code replaced it.
		if (process.cwd() !== cwd && G.require === ourRequire) {
			cwd = process.cwd();
			ourRequire = setModuleGlobals(cwd);
		}
		const restoreEnv = applyEnv(env);
		try {
			if (typeof code !== 'string') throw new TypeError('run: code must be a string');
			if (tsError) throw Object.assign(new Error(tsError), { name: 'TypeScriptUnavailable' });
			let js = ts ? transpile(ts, code, filename, !!repl) : code;
			if (repl) js = rewriteModuleSyntax(js);
			let { value } = await evaluate(js, filename);
			if (isThenable(value)) {
				value = await new Promise((resolve, reject) => {
					interruptAwait = reject;
					Promise.resolve(value).then(resolve, reject);
				});
			}
			if (value !== undefined) {
				done.result = clean(util.inspect(value, { depth: 4 }), RESULT_CAP);
				done.results.push(mainResult(value, done.result));
			}
		} catch (caught) {
			const { traceback, error, interrupted } = failure(caught);
			process.stderr.write(traceback + '\n');
			done.status = 'error';
			done.error = error;
			done.interrupted = interrupted;
		} finally {
			interruptAwait = null;
			restoreEnv();
			if (repl) repl.session.post('Runtime.releaseObjectGroup', { objectGroup: 'nsbox-cell' }, () => {});
		}
		return done;
	}

	const serve = (input, output) => {
		const send = (msg) => output.write(JSON.stringify(msg) + '\n');
		const ready = { op: 'ready', language: typescriptMode ? 'typescript' : 'javascript', version: process.versions.node };
		if (ts) ready.typescript = ts.version;
		if (tsError) ready.error = { type: 'TypeScriptUnavailable', message: tsError };
		send(ready);

		let buffered = Buffer.alloc(0);
		const queue = [];
		let busy = false;
		let ended = false;
		const pump = async () => {
			if (busy) return;
			busy = true;
			while (queue.length) {
				const msg = queue.shift();
				// Taken: from here the cell may run (the host retries a cell on
				// a new interpreter only when this one died before saying so).
				send({ op: 'got', id: msg.id === undefined ? null : msg.id });
				const done = await runCell(msg.code, msg.env);
				done.id = msg.id === undefined ? null : msg.id;
				send(done);
				// After `done`, so that the collection is not on the call's time.
				if (gc && cell % 20 === 0) setImmediate(gc);
			}
			busy = false;
			if (ended) process.exit(0);
		};
		input.on('data', (chunk) => {
			buffered = Buffer.concat([buffered, chunk]);
			let nl;
			while ((nl = buffered.indexOf(10)) >= 0) {
				const line = buffered.subarray(0, nl).toString('utf8');
				buffered = buffered.subarray(nl + 1);
				let msg;
				try {
					msg = JSON.parse(line);
				} catch {
					continue;
				}
				if (msg && typeof msg === 'object' && msg.op === 'run') queue.push(msg);
			}
			pump();
		});
		// The host closed the channel: the interpreter is no longer wanted
		// (--stdio-test: once the cells sent are done).
		input.on('end', () => {
			ended = true;
			if (!stdioTest || !busy) process.exit(0);
		});
		input.on('error', () => process.exit(0));
	};
	if (stdioTest) serve(process.stdin, process.stdout);
	else takeChannel((chan) => serve(chan, chan));
}

main();
