// nsbox's JavaScript driver, its ESM half: loaded by node.js at start by
// its absolute path (beside node.js, never through the cell's require or
// the working directory).  rewriteModuleSyntax(src) turns a cell's
// top-level import/export statements and import() calls into awaits of
// globalThis.__nsbox_import__, on the same lines; defineImport() defines
// that function, which resolves a specifier as a module of the working
// directory would and then import()s it.  docs/interpreters.md is the
// contract.  Node >= 18, no npm dependencies.
'use strict';
// The globals used here, as they are at start (a cell's top-level
// `const JSON = ...` is seen by every script, this module's code too).
const G = globalThis;
const { Array, Error, JSON, Object, Promise, Set, String, process } = G;
const fs = require('fs');
const Module = require('module');
const path = require('path');
const url = require('url');

// The name the rewritten cells call for import() (not enumerable).
const IMPORT_FN = '__nsbox_import__';

// ---- import/export statements ------------------------------------------

// Just enough of a JavaScript tokenizer to find the import/export
// statements of a cell's top level and its import() calls: strings,
// comments, templates (with ${} nesting), regular expressions (by the
// previous token), brackets.  Each token: t (kind), v (text), s/e (offsets),
// nl (a line break before it), depth (brackets open around it).
const BEFORE_REGEX = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await', 'extends']);
const CLOSERS = { ')': '(', ']': '[', '}': '{' };

function tokenize(src) {
	const toks = [];
	const stack = [];
	const n = src.length;
	let i = 0;
	let nl = true;
	const push = (t, s) => {
		toks.push({ t, v: src.slice(s, i), s, e: i, nl, depth: stack.length });
		nl = false;
	};
	const regexAllowed = () => {
		const p = toks[toks.length - 1];
		if (!p) return true;
		if (p.t === 'name') return BEFORE_REGEX.has(p.v);
		return p.t === 'punct' && !/^([)\]}]|\+\+|--)$/.test(p.v);
	};
	// From just inside a template (after ` or a closing }) to its end or ${.
	const template = (s) => {
		while (i < n && src[i] !== '`' && !(src[i] === '$' && src[i + 1] === '{')) i += src[i] === '\\' ? 2 : 1;
		if (src[i] === '$') {
			i += 2;
			push('tpl', s);
			stack.push('${');
		} else {
			i += 1;
			push('tpl', s);
		}
	};
	while (i < n) {
		const c = src[i];
		const s = i;
		if (c === '\n' || c === '\r' || c === '\u2028' || c === '\u2029') {
			nl = true;
			i++;
		} else if (/\s/.test(c)) {
			i++;
		} else if (c === '/' && src[i + 1] === '/') {
			while (i < n && src[i] !== '\n') i++;
		} else if (c === '/' && src[i + 1] === '*') {
			const end = src.indexOf('*/', i + 2);
			i = end < 0 ? n : end + 2;
			if (src.slice(s, i).includes('\n')) nl = true;
		} else if (c === '"' || c === "'") {
			i++;
			while (i < n && src[i] !== c && src[i] !== '\n') i += src[i] === '\\' ? 2 : 1;
			i++;
			push('str', s);
		} else if (c === '`') {
			i++;
			template(s);
		} else if (c === '}' && stack[stack.length - 1] === '${') {
			stack.pop();
			i++;
			template(s);
		} else if (/[A-Za-z_$#\\\u0080-\uffff]/.test(c)) {
			i++;
			while (i < n && /[\w$\\\u0080-\uffff]/.test(src[i])) i++;
			push('name', s);
		} else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(src[i + 1] || ''))) {
			while (i < n && /[\w.]/.test(src[i])) i++;
			push('num', s);
		} else if (c === '/' && regexAllowed()) {
			let inClass = false;
			for (i++; i < n && src[i] !== '\n'; i++) {
				if (src[i] === '\\') i++;
				else if (src[i] === '[') inClass = true;
				else if (src[i] === ']') inClass = false;
				else if (src[i] === '/' && !inClass) break;
			}
			i++;
			while (i < n && /\w/.test(src[i])) i++;
			push('re', s);
		} else {
			i += (c === '+' || c === '-') && src[i + 1] === c ? 2 : 1;
			if (CLOSERS[c] && stack[stack.length - 1] === CLOSERS[c]) stack.pop();
			push('punct', s);
			if (c === '(' || c === '[' || c === '{') stack.push(c);
		}
	}
	return toks;
}

const is = (tok, t, v) => !!tok && tok.t === t && (v === undefined || tok.v === v);

// The token after the bracket that opens at toks[k].
function afterClose(toks, k) {
	const depth = toks[k].depth;
	for (let j = k + 1; j < toks.length; j++) if (toks[j].depth === depth && is(toks[j], 'punct')) return j + 1;
	return -1;
}

// `import ... from 'm' [with {...}] [;]` at toks[k]: {end, text}, or null
// for what is not an import statement this understands (V8 then reports it).
function parseImport(toks, k, src) {
	let j = k + 1;
	let def = null;
	let ns = null;
	let named = null;
	if (!is(toks[j], 'str')) {
		if (is(toks[j], 'name') && !(toks[j].v === 'from' && is(toks[j + 1], 'str'))) {
			def = toks[j++].v;
			if (is(toks[j], 'punct', ',')) j++;
		}
		if (is(toks[j], 'punct', '*')) {
			if (!is(toks[j + 1], 'name', 'as') || !is(toks[j + 2], 'name')) return null;
			ns = toks[j + 2].v;
			j += 3;
		} else if (is(toks[j], 'punct', '{')) {
			named = [];
			for (j++; !is(toks[j], 'punct', '}'); j++) {
				const item = toks[j];
				if (!item || (item.t !== 'name' && item.t !== 'str')) return null;
				let local = item.v;
				if (is(toks[j + 1], 'name', 'as') && is(toks[j + 2], 'name')) {
					local = toks[j + 2].v;
					j += 2;
				} else if (item.t === 'str') return null;
				named.push(local === item.v ? local : `${item.v}: ${local}`);
				if (is(toks[j + 1], 'punct', ',')) j++;
			}
			j++;
		}
		if (!is(toks[j], 'name', 'from')) return null;
		j++;
	}
	const spec = toks[j++];
	if (!is(spec, 'str')) return null;
	let attrs = '';
	if ((is(toks[j], 'name', 'with') || is(toks[j], 'name', 'assert')) && is(toks[j + 1], 'punct', '{') && !toks[j].nl) {
		const close = afterClose(toks, j + 1);
		if (close < 0) return null;
		const a = src.slice(toks[j + 1].s, toks[close - 1].e);
		attrs = `, { assert: ${a}, with: ${a} }`;
		j = close;
	}
	if (is(toks[j], 'punct', ';')) j++;
	const load = `await ${IMPORT_FN}(${spec.v}${attrs})`;
	let text;
	if (ns) text = `const ${ns} = ${load}${def ? `, ${def} = ${ns}.default` : ''};`;
	else if (named && (named.length || def)) text = `const { ${def ? `default: ${def}${named.length ? ', ' : ''}` : ''}${named.join(', ')} } = ${load};`;
	else if (def) text = `const ${def} = (${load}).default;`;
	else text = `${load};`;
	return { end: j, text };
}

// `export` at toks[k]: what replaces `export ... ` (a cell is no module).
function parseExport(toks, k) {
	const next = toks[k + 1];
	if (is(next, 'name', 'default')) return { end: k + 2, text: '' };
	if (is(next, 'punct', '{') || is(next, 'punct', '*')) {
		let j = is(next, 'punct', '{') ? afterClose(toks, k + 1) : k + 2;
		if (j < 0) return null;
		while (j < toks.length && !is(toks[j], 'str') && !is(toks[j], 'punct', ';') && !toks[j].nl && toks[j].t === 'name') j++;
		if (is(toks[j], 'str')) j++;
		if (is(toks[j], 'punct', ';')) j++;
		return { end: j, text: '' };
	}
	if (is(next, 'name')) return { end: k + 1, text: '' };
	return null;
}

// The cell with its import/export statements and import() calls rewritten;
// every line stays where it was (the stack's line numbers are the cell's).
function rewriteModuleSyntax(src) {
	if (!/\b(import|export)\b/.test(src)) return src;
	const toks = tokenize(src);
	const edits = [];
	for (let k = 0; k < toks.length; k++) {
		const tok = toks[k];
		const prev = toks[k - 1];
		if (tok.t !== 'name' || (tok.v !== 'import' && tok.v !== 'export') || is(prev, 'punct', '.')) continue;
		if (tok.v === 'import' && is(toks[k + 1], 'punct', '(')) {
			edits.push({ s: tok.s, e: tok.e, text: IMPORT_FN });
			continue;
		}
		const statementStart = !prev || tok.nl || is(prev, 'punct', ';') || is(prev, 'punct', '}');
		if (tok.depth !== 0 || !statementStart) continue;
		const parsed = tok.v === 'import' ? parseImport(toks, k, src) : parseExport(toks, k);
		if (!parsed) continue;
		const e = parsed.end > k + 1 ? toks[parsed.end - 1].e : tok.e;
		const lines = src.slice(tok.s, e).split('\n').length - 1;
		// An emptied `export ` must not glue its neighbours together.
		edits.push({ s: tok.s, e, text: parsed.text + '\n'.repeat(lines) || ' ' });
		k = parsed.end - 1;
	}
	let out = src;
	for (const ed of edits.reverse()) out = out.slice(0, ed.s) + ed.text + out.slice(ed.e);
	return out;
}

// ---- import() from the working directory -------------------------------

const CONDITIONS = new Set(['node', 'import', 'default']);

// A package.json "exports" target for the conditions of an import.
function exportTarget(t) {
	if (typeof t === 'string') return t;
	if (Array.isArray(t)) {
		for (const x of t) {
			const r = exportTarget(x);
			if (r) return r;
		}
	} else if (t && typeof t === 'object') {
		for (const [k, v] of Object.entries(t)) {
			if (!CONDITIONS.has(k)) continue;
			const r = exportTarget(v);
			if (r) return r;
		}
	}
	return null;
}

// "exports" for subpath ('.' or './x'): the target path, or null.
function resolveExports(exp, sub) {
	if (typeof exp === 'string' || Array.isArray(exp) || !Object.keys(exp).some((k) => k.startsWith('.')))
		return sub === '.' ? exportTarget(exp) : null;
	if (Object.prototype.hasOwnProperty.call(exp, sub)) return exportTarget(exp[sub]);
	let best = null;
	for (const key of Object.keys(exp)) {
		const star = key.indexOf('*');
		if (star < 0) continue;
		const pre = key.slice(0, star);
		const post = key.slice(star + 1);
		if (sub.startsWith(pre) && sub.endsWith(post) && sub.length >= key.length - 1 && (!best || pre.length > best.pre.length))
			best = { key, pre, match: sub.slice(pre.length, sub.length - post.length) };
	}
	if (!best) return null;
	const t = exportTarget(exp[best.key]);
	return t && t.split('*').join(best.match);
}

function notFound(spec, cwd, code) {
	const err = new Error(`Cannot find ${code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' ? 'an export for' : 'module'} '${spec}' imported from ${cwd}${path.sep}`);
	err.code = code;
	return err;
}

// What `import spec` in a module of the working directory would load, as a
// URL: builtins as they are, paths from the working directory, packages by
// their "exports" (conditions node, import, default) in the node_modules
// of the working directory and its parents, else as require would find
// them (main, extensions, NODE_PATH, the system's directories).
function resolveImport(spec, cwd) {
	if (spec.startsWith('node:') || Module.builtinModules.includes(spec) || /^(file|data):/.test(spec)) return spec;
	const req = Module.createRequire(path.join(cwd, '[cell]'));
	const fromRequire = (what) => {
		try {
			const file = req.resolve(what);
			return Module.builtinModules.includes(file) ? file : url.pathToFileURL(file).href;
		} catch (err) {
			throw notFound(spec, cwd, 'ERR_MODULE_NOT_FOUND');
		}
	};
	if (/^\.{0,2}\//.test(spec) || spec === '.' || spec === '..') {
		const file = path.resolve(cwd, spec);
		if (fs.existsSync(file) && fs.statSync(file).isFile()) return url.pathToFileURL(file).href;
		return fromRequire(file);
	}
	const m = /^((?:@[^/]+\/)?[^/]+)(\/.*)?$/.exec(spec);
	if (!m) throw notFound(spec, cwd, 'ERR_MODULE_NOT_FOUND');
	for (const dir of Module._nodeModulePaths(cwd)) {
		const pkgDir = path.join(dir, m[1]);
		let pkg;
		try {
			pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
		} catch {
			if (fs.existsSync(pkgDir)) break;
			continue;
		}
		if (!pkg || pkg.exports === undefined || pkg.exports === null) break;
		const target = resolveExports(pkg.exports, '.' + (m[2] || ''));
		if (!target) throw notFound(spec, cwd, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
		const file = path.join(pkgDir, target);
		if (!fs.existsSync(file)) throw notFound(spec, cwd, 'ERR_MODULE_NOT_FOUND');
		return url.pathToFileURL(file).href;
	}
	return fromRequire(spec);
}

function defineImport() {
	const importFor = (spec, options) => {
		try {
			return import(resolveImport(String(spec), process.cwd()), options);
		} catch (err) {
			return Promise.reject(err);
		}
	};
	Object.defineProperty(G, IMPORT_FN, { value: importFor, writable: true, configurable: true, enumerable: false });
}

module.exports = { rewriteModuleSyntax, defineImport };
