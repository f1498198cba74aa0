// A small Node http app (tests/services/browser.py writes it into a sandbox
// and starts it in the background): a page whose JavaScript fetches the
// relative path api/info and renders it.  Node's standard library only.
const http = require('http');
const PORT = Number(process.env.PORT || 3000);
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Info</title></head>
<body style="font:20px sans-serif"><h1 id="title">loading...</h1>
<script>
fetch('api/info').then(r => r.json()).then(d => {
  document.getElementById('title').textContent = 'node ' + d.node + ' says ' + d.message;
  document.body.style.background = '#43a047';
});
</script></body></html>`;
http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  if (path === '/' || path === '/index.html') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  } else if (path === '/api/info') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ node: process.version, message: 'hello from the sandbox' }));
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  }
}).listen(PORT, '127.0.0.1', () => console.log(`listening on ${PORT}`));
