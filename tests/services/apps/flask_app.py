# A small Flask app as a model would write it (tests/services/browser.py
# writes it into a sandbox as /workspace/app.py and starts it in the
# background): a page whose JavaScript fetches the relative path api/todos
# and renders the answer, so it works under a path prefix (/p/TOKEN/) as
# well as at /.  When the answer is drawn the page turns blue (#1e88e5): the
# screenshot check looks for that colour.
import flask
from flask import Flask, jsonify

app = Flask(__name__)

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Todos</title>
<style>body{font:20px sans-serif;margin:0;padding:24px;background:#fff}
h1{margin:0 0 12px}li{margin:4px 0}</style></head>
<body><h1 id="title">loading...</h1><ul id="list"></ul>
<script>
fetch('api/todos').then(r => r.json()).then(d => {
  document.getElementById('title').textContent = d.items.length + ' todos from ' + d.server;
  for (const t of d.items) {
    const li = document.createElement('li');
    li.textContent = t;
    document.getElementById('list').appendChild(li);
  }
  document.body.style.background = '#1e88e5';
}).catch(e => { document.getElementById('title').textContent = 'error: ' + e; });
</script></body></html>"""


@app.get("/")
def index():
    return PAGE


@app.get("/api/todos")
def todos():
    return jsonify(server="Flask " + flask.__version__.split(".")[0],
                   items=["write the app", "expose port 5000", "open it in a browser"])


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=5000)
