// The JS tests' reporter, as tests/lib.sh's: each test prints exactly one
// line, `PASS: SUITE/name` or `FAIL: SUITE/name: reason` (one line, cut at
// 600 characters), and `# ...` notes; tests/run.sh counts the lines.
// SUITE comes from the environment (the shell suite sets it).
//
//   import { pass, fail, note, failures } from '../lib/report.mjs';
export const SUITE = process.env.SUITE || 'js';

let nfail = 0;

/** The number of FAIL lines printed so far. */
export const failures = () => nfail;

const oneLine = s => {
	const t = String(s).replace(/\s+/g, ' ').trim();
	return t.length > 600 ? t.slice(0, 600) + '...' : t;
};

export function pass(name) {
	console.log(`PASS: ${SUITE}/${name}`);
}

export function fail(name, why) {
	nfail++;
	console.log(`FAIL: ${SUITE}/${name}: ${oneLine(why)}`);
}

export function note(text) {
	console.log(`# ${oneLine(text)}`);
}
