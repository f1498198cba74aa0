// nsbox's JavaScript/TypeScript driver: a persistent interpreter for
// execute_code in a kept sandbox.  Started as `node /.nsbox/drivers/node.js`
// (or with `--typescript`) with fd 0 = the driver channel (a stream socket),
// fd 1/2 = the code's output pipes.  docs/interpreters.md is the contract.
// Node >= 18, no npm dependencies.
//
// The cells run in this very context (vm.runInThisContext), so top-level
// let/const/class of one cell are seen by the next.  They can clobber any
// global; the driver keeps what it needs in this module's scope.
'use strict';
const childProcess = require('child_process');
const fs = require('fs');
const Module = require('module');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');

const RESULT_CAP = 64 * 1024;
const MESSAGE_CAP = 64 * 1024;
const typescriptMode = process.argv.includes('--typescript');

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

// Top-level let/const become var, so that running a cell again (or an
// import in two cells: `const fs_1 = require("fs")`) does not fail with
// "Identifier has already been declared", as in a notebook.
function topLevelVar(ts) {
	return (context) => (file) => {
		const f = context.factory;
		const statements = file.statements.map((s) => {
			if (!ts.isVariableStatement(s) || !(s.declarationList.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const))) return s;
			return f.updateVariableStatement(s, s.modifiers, f.createVariableDeclarationList(s.declarationList.declarations, ts.NodeFlags.None));
		});
		return f.updateSourceFile(file, statements);
	};
}

function transpile(ts, code, filename) {
	const out = ts.transpileModule(code, {
		fileName: filename + '.ts',
		reportDiagnostics: true,
		compilerOptions: {
			target: ts.ScriptTarget.ES2020,
			module: ts.ModuleKind.CommonJS,
			esModuleInterop: true,
			sourceMap: false,
		},
		transformers: { after: [topLevelVar(ts)] },
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

// The stack as Node would print it, without the driver's frames.
function stackOf(err) {
	if (!(err instanceof Error) || typeof err.stack !== 'string') return `Uncaught ${util.inspect(err)}`;
	// Everything from the first frame of vm or of the driver on is ours;
	// frames of Node's own modules that the cell called stay.
	const lines = err.stack.split('\n');
	const ours = lines.findIndex((l) => /^\s+at /.test(l) && (l.includes(__filename) || l.includes('(node:vm:')));
	return (ours < 0 ? lines : lines.slice(0, ours)).join('\n');
}

function errorOf(err) {
	if (err instanceof Error) return { type: clean(err.name || err.constructor.name, 1024), message: clean(err.message, MESSAGE_CAP) };
	return { type: clean(typeof err, 1024), message: clean(util.inspect(err), MESSAGE_CAP) };
}

// Globals a CommonJS module would have, from the working directory.
function setModuleGlobals(cwd) {
	const filename = path.join(cwd, '[cell]');
	const mod = new Module(filename, null);
	mod.filename = filename;
	mod.paths = Module._nodeModulePaths(cwd);
	globalThis.require = Module.createRequire(filename);
	globalThis.module = mod;
	globalThis.exports = mod.exports;
	globalThis.__dirname = cwd;
	globalThis.__filename = filename;
	return globalThis.require;
}

function main() {
	let ts = null;
	let tsError = null;
	if (typescriptMode) {
		const loaded = loadTypescript();
		ts = loaded.ts || null;
		tsError = loaded.error || null;
	}
	const gc = ts ? collector() : null;
	let cwd = process.cwd();
	let ourRequire = setModuleGlobals(cwd);
	let cell = 0;
	let interruptAwait = null; // rejects the awaited completion value on SIGINT

	// SIGINT between cells (the host's timeout racing `done`) must not kill
	// the interpreter; during an await it abandons the wait.
	process.on('SIGINT', () => {
		if (interruptAwait) interruptAwait();
	});
	// Errors of background work are the code's, not fatal: print them as Node
	// would and keep the state.
	process.on('uncaughtException', (err) => process.stderr.write(`Uncaught ${stackOf(err)}\n`));
	process.on('unhandledRejection', (err) => process.stderr.write(`Uncaught (in promise) ${stackOf(err)}\n`));

	async function runCell(code) {
		cell += 1;
		const filename = `cell-${cell}`;
		const done = { op: 'done', status: 'ok', result: null, error: null, interrupted: false, figures: [] };
		// The code's require follows its chdir unless the code replaced it.
		if (process.cwd() !== cwd && globalThis.require === ourRequire) {
			cwd = process.cwd();
			ourRequire = setModuleGlobals(cwd);
		}
		try {
			if (typeof code !== 'string') throw new TypeError('run: code must be a string');
			if (tsError) throw Object.assign(new Error(tsError), { name: 'TypeScriptUnavailable' });
			const js = ts ? transpile(ts, code, filename) : code;
			let value = vm.runInThisContext(js, { filename, breakOnSigint: true });
			if (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function') {
				value = await new Promise((resolve, reject) => {
					interruptAwait = () => reject(Object.assign(new Error('Script execution was interrupted by `SIGINT`'), { code: 'ERR_SCRIPT_EXECUTION_INTERRUPTED' }));
					Promise.resolve(value).then(resolve, reject);
				}).finally(() => (interruptAwait = null));
			}
			if (value !== undefined) done.result = clean(util.inspect(value, { depth: 4 }), RESULT_CAP);
		} catch (err) {
			process.stderr.write(stackOf(err) + '\n');
			done.status = 'error';
			done.error = errorOf(err);
			done.interrupted = !!(err && err.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED');
		}
		return done;
	}

	takeChannel((chan) => {
		const send = (msg) => chan.write(JSON.stringify(msg) + '\n');
		const ready = { op: 'ready', language: typescriptMode ? 'typescript' : 'javascript', version: process.versions.node };
		if (ts) ready.typescript = ts.version;
		if (tsError) ready.error = { type: 'TypeScriptUnavailable', message: tsError };
		send(ready);

		let pending = Buffer.alloc(0);
		const queue = [];
		let busy = false;
		const pump = async () => {
			if (busy) return;
			busy = true;
			while (queue.length) {
				const msg = queue.shift();
				const done = await runCell(msg.code);
				done.id = msg.id === undefined ? null : msg.id;
				send(done);
				// After `done`, so that the collection is not on the call's time.
				if (gc && cell % 20 === 0) setImmediate(gc);
			}
			busy = false;
		};
		chan.on('data', (chunk) => {
			pending = Buffer.concat([pending, chunk]);
			let nl;
			while ((nl = pending.indexOf(10)) >= 0) {
				const line = pending.subarray(0, nl).toString('utf8');
				pending = pending.subarray(nl + 1);
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
		// The host closed the channel: the interpreter is no longer wanted.
		chan.on('end', () => process.exit(0));
		chan.on('error', () => process.exit(0));
	});
}

main();
