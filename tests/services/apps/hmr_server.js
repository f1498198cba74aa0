// A vite-style dev server in miniature (tests/services/browser.py runs it in
// a sandbox; docs/services.md walks through it): it serves a page and the
// files under ./src, and pushes {"type":"reload"} over a WebSocket at the
// relative path "ws" whenever a file under ./src changes (fs.watch), as
// vite's HMR client connection does.  The page opens the WebSocket with
// new URL('ws', location.href) (ws: or wss: as the page's scheme), so it
// works under a preview URL's path prefix; on "reload" it fetches
// src/message.txt again and redraws.  It answers the page's "ping" with
// "pong", so both directions of the socket are exercised.
// Node's standard library only (Node 18+): the WebSocket handshake and
// framing (RFC 6455, text frames, unfragmented) are written out below.
const http = require('http');
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const PORT = Number(process.env.PORT || 5173);
const SRC = path.join(__dirname, 'src');
fs.mkdirSync(SRC, { recursive: true });
if (!fs.existsSync(path.join(SRC, 'message.txt'))) fs.writeFileSync(path.join(SRC, 'message.txt'), 'first version');

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>dev server</title></head>
<body style="font:20px sans-serif">
<p>socket: <span id="state">connecting</span>, reloads: <span id="reloads">0</span></p>
<h1 id="app">...</h1>
<script>
let reloads = 0;
const render = () => fetch('src/message.txt?t=' + Date.now()).then(r => r.text())
  .then(t => { document.getElementById('app').textContent = t; });
render();
const u = new URL('ws', location.href);
u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
const ws = new WebSocket(u);
ws.onopen = () => ws.send('ping');
ws.onmessage = e => {
  if (e.data === 'pong') { document.getElementById('state').textContent = 'connected'; return; }
  const m = JSON.parse(e.data);
  if (m.type === 'reload') render().then(() => {
    document.getElementById('reloads').textContent = String(++reloads);
  });
};
ws.onclose = () => { document.getElementById('state').textContent = 'closed'; };
</script></body></html>`;

const clients = new Set();

function frame(text) {
  const body = Buffer.from(text);
  let head;
  if (body.length < 126) head = Buffer.from([0x81, body.length]);
  else if (body.length < 65536) { head = Buffer.alloc(4); head[0] = 0x81; head[1] = 126; head.writeUInt16BE(body.length, 2); }
  else { head = Buffer.alloc(10); head[0] = 0x81; head[1] = 127; head.writeBigUInt64BE(BigInt(body.length), 2); }
  return Buffer.concat([head, body]);
}

// Client frames are masked (RFC 6455 5.3); yields [opcode, payload] of each
// whole frame in buf and returns what is left over.
function parse(buf, onFrame) {
  for (;;) {
    if (buf.length < 2) return buf;
    const op = buf[0] & 0x0f;
    let len = buf[1] & 0x7f, off = 2;
    if (len === 126) { if (buf.length < 4) return buf; len = buf.readUInt16BE(2); off = 4; }
    else if (len === 127) { if (buf.length < 10) return buf; len = Number(buf.readBigUInt64BE(2)); off = 10; }
    const masked = buf[1] & 0x80;
    const need = off + (masked ? 4 : 0) + len;
    if (buf.length < need) return buf;
    const mask = masked ? buf.subarray(off, off + 4) : null;
    const data = Buffer.from(buf.subarray(need - len, need));
    if (mask) for (let i = 0; i < data.length; i++) data[i] ^= mask[i & 3];
    onFrame(op, data);
    buf = buf.subarray(need);
  }
}

const server = http.createServer((req, res) => {
  const p = req.url.split('?')[0];
  if (p === '/' || p === '/index.html') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    return res.end(PAGE);
  }
  if (p.startsWith('/src/')) {
    const f = path.join(SRC, path.basename(p));
    return fs.readFile(f, (err, data) => {
      if (err) { res.writeHead(404); return res.end(); }
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.end(data);
    });
  }
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end('not found\n');
});

server.on('upgrade', (req, sock) => {
  const key = req.headers['sec-websocket-key'];
  if (req.url.split('?')[0] !== '/ws' || (req.headers.upgrade || '').toLowerCase() !== 'websocket' || !key) {
    sock.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    return;
  }
  const accept = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
             `Sec-WebSocket-Accept: ${accept}\r\n\r\n`);
  clients.add(sock);
  console.log(`hmr client connected (${clients.size})`);
  let buf = Buffer.alloc(0);
  sock.on('data', d => {
    buf = parse(Buffer.concat([buf, d]), (op, data) => {
      if (op === 1 && data.toString() === 'ping') sock.write(frame('pong'));
      else if (op === 8) { sock.end(Buffer.from([0x88, 0])); }
      else if (op === 9) sock.write(Buffer.concat([Buffer.from([0x8a, data.length]), data]));
    });
  });
  const gone = () => { if (clients.delete(sock)) console.log(`hmr client gone (${clients.size})`); };
  sock.on('close', gone);
  sock.on('error', gone);
});

let pending = null;
fs.watch(SRC, (ev, name) => {
  // Editors write in several steps: one reload per burst, as vite does.
  clearTimeout(pending);
  pending = setTimeout(() => {
    console.log(`changed: ${name}; reloading ${clients.size} client(s)`);
    const msg = frame(JSON.stringify({ type: 'reload', path: `/src/${name}` }));
    for (const c of clients) c.write(msg);
  }, 30);
});

server.listen(PORT, '127.0.0.1', () => console.log(`dev server on ${PORT}`));
