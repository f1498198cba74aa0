// nsbox's node zygote (mcp/interp/zygote.c, docs/warm.md): a node started
// in a spare sandbox as `node -e THIS [--typescript] [MODULE...]`, before
// any call, that requires the --warm-import modules (and, for TypeScript,
// the typescript compiler), says it is ready, and waits for ONE program on
// its stdin (a socket to the server).  It then runs that program as
// `node -e PROGRAM` would (JavaScript: a script in this context named
// [eval], with module, require, exports, __dirname and __filename) or as
// `nsbox-ts -e PROGRAM` would (TypeScript: transpiled, types erased, with
// the same options, then run as the CommonJS module CWD/[eval].ts), and
// the process ends with the program: node's own handling of an uncaught
// error, process.exit and the event loop.  Never reused.
//
// The channel is the one of zygote.py (which says its format).  Node
// writes its stdout and stderr to pipes synchronously on Linux, so both
// are whole when the last 'exit' listener returns.
(function () {
  const fs = require('fs');
  const path = require('path');
  const vm = require('vm');
  const Module = require('module');
  const req = require; // the -e wrapper's: its globals go before the program
  const args = process.argv.slice(1);
  process.argv.splice(1);
  const typescript = args[0] === '--typescript';
  if (typescript) args.shift();
  const failed = [];
  const clean = (s) => String(s).replace(/[\n\x1f]/g, ' ').slice(0, 300);
  let ts = null;
  if (typescript) {
    try {
      ts = require(require.resolve('typescript', { paths: ['/usr/local/bin', '/usr/local/lib', '/usr/lib'] }));
      ts.transpileModule('const a: number = 1;', {}); // its functions compiled now
    } catch (e) {
      failed.push(clean('typescript: ' + e.message));
    }
  }
  for (const name of args) {
    try {
      require(name);
    } catch (e) {
      failed.push(clean(name + ': ' + (e && e.name) + ': ' + (e && e.message)));
    }
  }
  // What every program's first line pays, paid now: stdout and stderr's
  // streams (made on first use: the same pipes the program writes to),
  // console's formatting, a script compiled and a module made.
  void process.stdout, process.stderr;
  require('util').format('%s %d %o', 'a', 1, { a: [1] });
  vm.runInThisContext('0', { filename: '[warm]' });
  new Module('[warm]')._compile('return 0', '[warm]');
  const sleep = new Int32Array(new SharedArrayBuffer(4));
  function read(buf) {
    for (;;) {
      try {
        return fs.readSync(0, buf, 0, buf.length, null);
      } catch (e) {
        if (e.code !== 'EAGAIN' && e.code !== 'EINTR') return 0;
        Atomics.wait(sleep, 0, 0, 1);
      }
    }
  }
  fs.writeSync(0, ['ready', ...failed].join('\x1f') + '\n');
  let data = Buffer.alloc(0);
  const chunk = Buffer.alloc(65536);
  let nl;
  while ((nl = data.indexOf(10)) < 0) {
    const n = read(chunk);
    if (n <= 0) process.exit(0);
    data = Buffer.concat([data, chunk.subarray(0, n)]);
  }
  const size = Number(data.subarray(0, nl).toString());
  data = data.subarray(nl + 1);
  while (data.length < size) {
    const n = read(chunk);
    if (n <= 0) process.exit(0);
    data = Buffer.concat([data, chunk.subarray(0, n)]);
  }
  const fields = [];
  let at = 0;
  const field = () => {
    const end = data.indexOf(0, at);
    const s = data.subarray(at, end);
    at = end + 1;
    return s;
  };
  const cwd = field().toString();
  const n = Number(field().toString());
  for (let i = 0; i < n; i++) fields.push(field().toString());
  const code = data.subarray(at, size).toString();
  try {
    process.chdir(cwd);
  } catch (e) {
    fs.writeSync(0, 'n\n'); // a fresh process gives the exact error
    process.exit(0);
  }
  if (typescript && ts === null) {
    fs.writeSync(0, 'n\n');
    process.exit(0);
  }
  for (const item of fields) {
    const eq = item.indexOf('=');
    process.env[item.slice(0, eq)] = item.slice(eq + 1);
  }
  const cpu0 = process.cpuUsage();
  fs.writeSync(0, 'g ' + (cpu0.user + cpu0.system) + '\n');
  // The channel stays on fd 0 for the end (node cannot dup it): the
  // server has shut its side for writing, so the program's stdin reads
  // EOF at once, as a fresh one's /dev/null does.
  const chan = 0;
  // A clean end (status 0), said before node tears itself down (V8's
  // teardown costs more than a small program): once every 'exit'
  // listener ran (the program's too), its output closed, "x 0 CPU_US
  // HWM_BYTES" as zygote.py says.  Any other end says nothing (node
  // prints an uncaught error after 'exit'): init's status is the result.
  const emit = process.emit;
  const owner = process.pid;
  process.emit = function (event, ...rest) {
    const r = emit.call(this, event, ...rest);
    // Only a clean end: node prints an uncaught error after 'exit'.
    if (event === 'exit' && process.pid === owner && !(process.exitCode & 0xff)) {
      try {
        const status = 0;
        const cpu = process.cpuUsage(cpu0);
        const hwm = process.resourceUsage().maxRSS * 1024;
        fs.closeSync(1);
        fs.closeSync(2);
        fs.writeSync(chan, 'x ' + status + ' ' + (cpu.user + cpu.system) + ' ' + hwm + '\n');
      } catch (e) {
        // the real exit status then
      }
    }
    return r;
  };
  for (const k of ['module', 'exports', '__dirname', 'require', '__filename']) delete globalThis[k];

  if (typescript) {
    // As images/default/nsbox-ts.
    const filename = path.join(process.cwd(), '[eval].ts');
    const out = ts.transpileModule(code, {
      fileName: filename,
      reportDiagnostics: true,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2020,
        esModuleInterop: true,
        sourceMap: false,
      },
    });
    const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (errors.length > 0) {
      const host = {
        getCanonicalFileName: (f) => f,
        getCurrentDirectory: () => process.cwd(),
        getNewLine: () => '\n',
      };
      process.stderr.write(ts.formatDiagnostics(errors, host));
      process.exit(1);
    }
    process.argv = [process.argv[0], filename];
    const m = new Module(filename, null);
    m.filename = filename;
    m.paths = Module._nodeModulePaths(path.dirname(filename));
    req.main = m;
    process.mainModule = m;
    m._compile(out.outputText, filename);
    return;
  }
  // As node's own -e (lib/internal/process/execution.js, evalScript).
  const name = '[eval]';
  const module = new Module(name);
  module.filename = path.join(process.cwd(), name);
  module.paths = Module._nodeModulePaths(process.cwd());
  const wrapper = 'globalThis.module = module; globalThis.exports = exports; ' +
    'globalThis.__dirname = __dirname; globalThis.require = require; return (main) => main();';
  globalThis.__filename = name;
  module._compile(wrapper, name + '-wrapper')(() =>
    vm.runInThisContext(code, {
      filename: name,
      displayErrors: true,
      importModuleDynamically: (specifier) => import(specifier),
    }));
})();
