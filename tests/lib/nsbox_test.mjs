// The JS tests' reporter, as tests/lib.sh's for the shell suites and
// tests/lib/nsbox_test.py's for the Python ones: each test prints exactly
// one line,
//   PASS: SUITE/name
//   FAIL: SUITE/name: reason      (one line, cut at 600 characters)
//   SKIP: SUITE/name: reason      (only where tests/skips.allow lists it)
//   # a note
// and tests/run.sh counts them against tests/suites.tsv.  SUITE comes from
// the environment (the shell suite that runs the program sets it), else
// from the program's own default; a program may add a prefix to its names
// (sdk_, sse_...).  The suite's "# done SUITE" marker is the shell suite's
// (tests/lib.sh: finish), never a client's: finish() here only sets the
// exit status (1 when a FAIL was printed).
//
// An uncaught exception (a rejected top-level await, a throw outside any
// test) is `FAIL: SUITE/PREFIXharness: the error` and exit status 2: never a
// stack trace that exits 1 and reads as "a test failed".
//
//   import { configure, pass, fail, note, report, test, finish } from '../lib/nsbox_test.mjs';
//   configure({ defaultSuite: 'mcp_http', prefix: 'sdk_' });   // optional
//   pass('name'); fail('name', why); skip('name', why); note(text);
//   report('name', why);          // PASS when why is undefined or null
//   await test('name', async () => { ...; return why; });   // a deadline,
//                                 // an exception is a FAIL (see test)
//   finish();
const WIDTH = 600;
let nfail = 0;

/** The number of FAIL lines printed so far (every reporter's). */
export const failures = () => nfail;

/** text on one line (runs of white space are one space), cut at width. */
export function oneLine(text, width = WIDTH) {
	const t = String(text).replace(/\s+/g, ' ').trim();
	return t.length > width ? t.slice(0, width) + '...' : t;
}

/** A test's assertion that did not hold: its message is the FAIL reason. */
export class Check extends Error {}

/** Throws Check(why) unless cond; why may be a function (computed only
 *  when the check fails). */
export function ok(cond, why) {
	if (!cond) throw new Check(typeof why === 'function' ? why() : why);
}

/** The first two lines of an error's stack (its message and where), or the
 *  value itself: test()'s default FAIL reason for an exception. */
export const stackWhy = e => (e && e.stack ? e.stack.split('\n').slice(0, 2).join(' ') : e);

/** PASS/FAIL/SKIP lines named SUITE/PREFIXname.  suite: the suite's name
 *  (default: $SUITE, else defaultSuite); width: where a reason is cut. */
export class Reporter {
	constructor({ prefix = '', suite, defaultSuite = 'test', width = WIDTH } = {}) {
		this.suite = suite || process.env.SUITE || defaultSuite;
		this.prefix = prefix;
		this.width = width;
		/** The names this reporter printed a line for. */
		this.seen = new Set();
	}
	name(name) {
		return `${this.suite}/${this.prefix}${name}`;
	}
	pass(name) {
		this.seen.add(name);
		console.log(`PASS: ${this.name(name)}`);
	}
	fail(name, why) {
		this.seen.add(name);
		nfail++;
		console.log(`FAIL: ${this.name(name)}: ${oneLine(why, this.width)}`);
	}
	/** A test that cannot run here: allowed only where tests/skips.allow
	 *  lists SUITE/name (tests/run.sh fails it otherwise); never a PASS. */
	skip(name, why) {
		this.seen.add(name);
		console.log(`SKIP: ${this.name(name)}: ${oneLine(why, this.width)}`);
	}
	/** A `# ` line: its newlines folded, its spacing kept, never cut. */
	note(text) {
		console.log(`# ${String(text).split(/\r?\n/).join(' ')}`);
	}
	/** PASS when why is undefined or null, else FAIL with why. */
	report(name, why) {
		if (why === undefined || why === null) this.pass(name);
		else this.fail(name, why);
	}
	/** Runs fn() with a deadline of `seconds`: what it returns is the
	 *  verdict (undefined or null: PASS, else the FAIL reason), or with
	 *  `throws: true` any return is a PASS (a test that asserts with ok()).
	 *  An exception, the deadline too, is a FAIL with why(e) as the reason
	 *  (default: the first two lines of its stack).  opts may be just the
	 *  seconds.  Returns true on PASS. */
	async test(name, fn, opts = {}) {
		const { seconds = 60, throws = false, why = stackWhy } = typeof opts === 'number' ? { seconds: opts } : opts;
		let timer;
		try {
			const got = await Promise.race([
				fn(),
				new Promise((_, reject) => {
					timer = setTimeout(() => reject(new Error(`test timed out after ${seconds} s`)), seconds * 1000);
				}),
			]);
			this.report(name, throws ? undefined : got);
			return throws || got === undefined || got === null;
		} catch (e) {
			this.fail(name, why(e));
			return false;
		} finally {
			clearTimeout(timer);
		}
	}
}

let dflt = null;

/** Sets the reporter of the module's functions (and of the harness's FAIL
 *  line); returns it. */
export function configure(opts = {}) {
	dflt = new Reporter(opts);
	return dflt;
}

/** The module's reporter (configure()'s, else one named from $SUITE). */
export const reporter = () => (dflt ??= new Reporter());

export const pass = name => reporter().pass(name);
export const fail = (name, why) => reporter().fail(name, why);
export const skip = (name, why) => reporter().skip(name, why);
export const note = text => reporter().note(text);
export const report = (name, why) => reporter().report(name, why);
export const test = (name, fn, opts) => reporter().test(name, fn, opts);

/** Exits: status 1 when a FAIL was printed, else 0. */
export function finish() {
	process.exit(nfail ? 1 : 0);
}

/** An error outside any test: `FAIL: SUITE/PREFIXharness: ...` and status 2. */
export function harness(e) {
	nfail++;
	console.log(`FAIL: ${reporter().name('harness')}: ${oneLine(e instanceof Error ? e.message : e, 500)}`);
	if (e && e.stack) console.error(e.stack);
	process.exit(2);
}

// Also what nobody caught: a throw outside any test, a rejected top-level
// await (and, unless the program listens for them itself, unhandled
// rejections, which node raises as uncaught exceptions) -- unless the
// program handles uncaught exceptions itself (a listener of its own: it
// reports them and goes on).
process.on('uncaughtException', e => {
	if (process.listenerCount('uncaughtException') === 1) harness(e);
});
