#!/usr/bin/env python3
"""The Python driver's notebook semantics and rich results (issue #27;
docs/interpreters.md), in a real sandbox of the default image (python3 with
matplotlib, pandas, PIL): the driver files of this tree and
tests/mcp/notebook_runner.py are copied into a sandbox made with `nsbox
create`, and the runner drives the driver there as nsbox does (a socketpair
on fd 0, pipes on 1/2, SIGINT to its group), one cell after the other.
Checked: `done`'s execution_count, results (display bundles in order, the
main result last), error name/value/traceback, run.env (for the cell only,
never echoed); display(), _repr_*_ and _repr_mimebundle_, DataFrames, PIL
images, matplotlib figures as png + chart (E2B's chart tests' values), the
8 MiB bundle cap, strict JSON; dedent, !cmd (streamed, x = !cmd), line and
cell magics, unknown magics; the helpers never shadow the user's modules.
Environment: NSBOX, NSBOX_STORE, SUITE (default interp_notebook)."""
import base64
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from nsbox_test import finish, note, result  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
NSBOX = os.environ.get("NSBOX") or os.path.join(ROOT, "build", "nsbox")
STORE = os.environ.get("NSBOX_STORE") or "/var/lib/nsbox"
IMAGE = "localhost/nsbox-default:latest"
os.environ.setdefault("SUITE", "interp_notebook")
SECRET = "s3cr3t-value-7781"


def nsbox(*args, stdin=None, timeout=300):
    return subprocess.run([NSBOX, "--store", STORE] + list(args), input=stdin, capture_output=True,
                          timeout=timeout)


def results(d):
    return (d or {}).get("results") or []


def main_of(d):
    return next((b for b in results(d) if b.get("is_main_result")), None)


def chart_of(d):
    return next((b["chart"] for b in results(d) if "chart" in b), None)


PLT = "import matplotlib.pyplot as plt, numpy as np, datetime\n"
CASES = []


def case(name, code, check, **extra):
    """check(done, stdout, stderr, record) -> None or the reason."""
    CASES.append((name, dict(code=code, **extra), check))


def want(cond, why):
    return None if cond else why


# -- protocol ----------------------------------------------------------------
case("count_and_main_result", "x = 20\nx + 1",
     lambda d, o, e, r: want(d["execution_count"] == 1 and results(d) == [{"text": "21", "is_main_result": True}]
                             and d["result"] == "21", "count/results"))
case("count_increments", "x", lambda d, o, e, r: want(d["execution_count"] == 2, "count %s" % d.get("execution_count")))
case("error_fields", "def f():\n    raise ValueError('bad')\nf()",
     lambda d, o, e, r: want(d["status"] == "error" and d["error"]["name"] == "ValueError" == d["error"]["type"]
                             and d["error"]["value"] == "bad" == d["error"]["message"]
                             and 'File "<cell-3>", line 2, in f' in d["error"]["traceback"]
                             and d["error"]["traceback"].rstrip().endswith("ValueError: bad")
                             and "python.py" not in d["error"]["traceback"]
                             and d["error"]["traceback"] in e, "error %s" % d.get("error")))
case("env_for_the_cell", "import os, subprocess\nv = os.environ['NB_SECRET']\nw = subprocess.run(['sh', '-c', 'echo $NB_SECRET'], capture_output=True, text=True).stdout.strip()\nok = v == w == %r\nok" % SECRET,
     lambda d, o, e, r: want(d["result"] == "True" and SECRET not in r["raw"], "result %s; secret echoed: %s" % (d["result"], SECRET in r["raw"])),
     env={"NB_SECRET": SECRET, "HOME": "/nowhere"})
case("env_restored", "os.environ.get('NB_SECRET'), os.environ.get('HOME')",
     lambda d, o, e, r: want(d["result"] == "(None, '/root')", "result %s" % d["result"]))
case("env_refused_when_bad", "1", lambda d, o, e, r: want(d["status"] == "error" and "env" in d["error"]["value"], "done %s" % d),
     env={"A=B": "x"})
case("nothing_imported_yet", "import sys\nsorted(m for m in ('PIL', 'IPython', 'matplotlib', 'pandas', 'numpy') if m in sys.modules)",
     lambda d, o, e, r: want(d["result"] == "[]", "already imported: %s" % d["result"]))
# -- display -------------------------------------------------------------------
case("display_order", """
class H:
    def _repr_html_(self): return '<b>h</b>'
    def _repr_markdown_(self): return None
class M:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {'text/plain': 'm', 'application/json': {'k': [1, 2]}, 'application/x-thing': 'zz'}
display(1, H())
display(M())
display({'text/markdown': '# t', 'image/png': b'\\x89PNG'}, raw=True)
'last'""", lambda d, o, e, r: want(
    results(d) == [{"text": "1"}, {"html": "<b>h</b>", "text": results(d)[1].get("text")},
                   {"text": "m", "json": {"k": [1, 2]}, "extra": {"application/x-thing": "zz"}},
                   {"markdown": "# t", "png": base64.b64encode(b"\x89PNG").decode()},
                   {"text": "last", "is_main_result": True}], "results %s" % results(d)))
case("strict_json", """
class J:
    def _repr_json_(self): return {'nan': float('nan'), 'inf': float('inf'), 'big': 2**70, 1: 'a', '1': 'b', 'nul': 'a\\x00b'}
J()""", lambda d, o, e, r: want("invalid" not in r["done"] and main_of(d)["json"]["nan"] is None
                                and main_of(d)["json"]["inf"] is None and "\x00" not in main_of(d)["json"]["nul"]
                                and list(main_of(d)["json"]).count("1") == 1, "done %s" % str(r["done"])[:300]))
case("text_as_e2b", r"""
class R:
    def __repr__(self): return "'a' 'b'"
display('plain', "it's", 'a\'b"c', R(), '', "'", 'x"')
'last'""", lambda d, o, e, r: want(
    [b.get("text") for b in results(d)] == ["plain", "it's", "a\\'b\"c", "a' 'b", "", "'", "x\"", "last"]
    and d["result"] == "'last'", "texts %s result %s" % ([b.get("text") for b in results(d)], d["result"])))
case("bundle_cap", """
class Big:
    def _repr_png_(self): return b'\\x89PNG' + bytes(9 << 20)
Big()""", lambda d, o, e, r: want("png" not in main_of(d) and "image/png" in main_of(d).get("extra", {}).get("nsbox/dropped", ""),
                                  "main %s" % str(main_of(d))[:300]))
case("dataframe", "import pandas as pd\npd.DataFrame({'a': [1.5, None], 'b': ['x', 'y'], 't': pd.to_datetime(['2024-01-02', None])})",
     lambda d, o, e, r: want(main_of(d)["data"] == {"a": [1.5, None], "b": ["x", "y"], "t": ["2024-01-02T00:00:00", None]}
                             and "<table" in main_of(d)["html"] and "NaN" in main_of(d)["text"], "main %s" % main_of(d)))
case("pil_png", "from PIL import Image\nImage.new('RGB', (3, 2), 'red')",
     lambda d, o, e, r: want(base64.b64decode(main_of(d)["png"])[:8] == b"\x89PNG\r\n\x1a\n", "main %s" % main_of(d)))
PIL = "import numpy, io\nfrom PIL import Image\nimage = Image.fromarray((numpy.random.rand(16, 16, 3) * 255).astype('uint8')).convert('RGBA')\n"
case("pil_show", PIL + "image.show()\nprint('Image shown.')",
     lambda d, o, e, r: want(len(results(d)) == 1 and base64.b64decode(results(d)[0]["png"])[:4] == b"\x89PNG"
                             and o == "Image shown.\n", "results %s stdout %r" % (str(results(d))[:200], o)))
case("pil_save", PIL + "image.save('/tmp/nb-saved.png')\nimage.save(io.BytesIO(), format='PNG')\nprint('Image saved.')",
     lambda d, o, e, r: want(len(results(d)) == 1 and base64.b64decode(results(d)[0]["png"])[:4] == b"\x89PNG"
                             and o == "Image saved.\n", "results %s stdout %r" % (str(results(d))[:200], o)))
case("pil_save_wrote_the_file", "from PIL import Image as I\nI.open('/tmp/nb-saved.png').size",
     lambda d, o, e, r: want(d["result"] == "(16, 16)" and results(d) == [{"text": "(16, 16)", "is_main_result": True}],
                             "done %s" % str(d)[:300]))
case("pil_save_failing_not_shown", PIL + "image.save('/nonexistent/dir/x.png')",
     lambda d, o, e, r: want(d["status"] == "error" and d["error"]["name"] == "FileNotFoundError" and results(d) == [],
                             "done %s" % str(d)[:300]))
FAKE_IPYTHON = r"""
import os, sys
for d, body in (('IPython', 'from IPython import display\nREAL = True\n'), ('IPython/core', ''),
                ('IPython/core/display_functions.py', 'def display(*objs, **kw):\n    print("printed", *objs)\n'),
                ('IPython/display.py', 'from IPython.core.display_functions import display\n')):
    path = '/tmp/fakeipy/' + d
    if d.endswith('.py'):
        open(path, 'w').write(body)
    else:
        os.makedirs(path, exist_ok=True)
        open(path + '/__init__.py', 'w').write(body)
sys.path.insert(0, '/tmp/fakeipy')
import IPython
from IPython.display import display as ipy_display
ipy_display('routed')
found = IPython.__file__, IPython.REAL
sys.path.remove('/tmp/fakeipy')
for m in [m for m in sys.modules if m == 'IPython' or m.startswith('IPython.')]:
    del sys.modules[m]
del IPython, ipy_display
found"""
case("ipython_real_not_shadowed", FAKE_IPYTHON,
     lambda d, o, e, r: want(d["result"] == "('/tmp/fakeipy/IPython/__init__.py', True)" and o == ""
                             and results(d)[0] == {"text": "routed"}, "done %s stdout %r" % (str(d)[:300], o)))
# E2B's python/tests/sync/test_custom_repr_object.py
case("ipython_stand_in_custom_repr", "from IPython.display import display\n\ndisplay({'text/latex': r'\\text{CustomReprObject}'}, raw=True)",
     lambda d, o, e, r: want(results(d) == [{"latex": "\\text{CustomReprObject}"}], "done %s" % str(d)[:300]))
PNG1 = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")
case("ipython_stand_in", """
from IPython.display import display, HTML, Markdown, Image, SVG, JSON, Latex, Javascript, Pretty, clear_output
from IPython.core.display import display_html
import IPython, base64
png = base64.b64decode(%r)
open('/tmp/nb-one.png', 'wb').write(png)
display(HTML('<b>x</b>'), Markdown('# m'), Image(data=png), Image(filename='/tmp/nb-one.png'), SVG('<svg/>'))
IPython.display.display(JSON({'a': [1]}), Latex('$x$'), Javascript('var a;'), Pretty('pp'))
display_html('<i>raw</i>', raw=True)
clear_output()
IPython.get_ipython(), IPython.display.Image(url='http://example.invalid/a.png')""" % base64.b64encode(PNG1).decode(),
     lambda d, o, e, r: want(results(d)[:10] == [
         {"html": "<b>x</b>", "text": "<IPython.core.display.HTML object>"},
         {"markdown": "# m", "text": "<IPython.core.display.Markdown object>"},
         {"png": base64.b64encode(PNG1).decode(), "text": "<IPython.core.display.Image object>"},
         {"png": base64.b64encode(PNG1).decode(), "text": "<IPython.core.display.Image object>"},
         {"svg": "<svg/>", "text": "<IPython.core.display.SVG object>"},
         {"json": {"a": [1]}, "text": "<IPython.core.display.JSON object>"},
         {"latex": "$x$", "text": "<IPython.core.display.Latex object>"},
         {"javascript": "var a;", "text": "<IPython.core.display.Javascript object>"},
         {"text": "pp"}, {"html": "<i>raw</i>"}]
         and d["result"] == "(None, <IPython.core.display.Image object>)", "results %s result %s" % (results(d), d["result"])))
# PIL's own ImageShow takes the stand-in for IPython and shows through it.
case("ipython_stand_in_used_by_pil", "import PIL.ImageShow, PIL.Image\nPIL.ImageShow.show(PIL.Image.new('RGB', (2, 2)))\n'IPythonViewer' in [type(v).__name__ for v in PIL.ImageShow._viewers]",
     lambda d, o, e, r: want(d["result"] == "True" and len(results(d)) == 2 and base64.b64decode(results(d)[0]["png"])[:4] == b"\x89PNG",
                             "done %s" % str(d)[:300]))
# -- charts (E2B's chart tests) ---------------------------------------------
case("chart_bar", PLT + """
plt.figure(figsize=(10, 6))
plt.bar(['Author A', 'Author B', 'Author C', 'Author D'], [100, 200, 300, 400], label='Books Sold', color='blue')
plt.xlabel('Authors'); plt.ylabel('Number of Books Sold'); plt.title('Book Sales by Authors')
plt.tight_layout(); plt.show()""", lambda d, o, e, r: want(
    chart_of(d)["type"] == "bar" and chart_of(d)["title"] == "Book Sales by Authors"
    and chart_of(d)["x_label"] == "Authors" and chart_of(d)["y_label"] == "Number of Books Sold"
    and chart_of(d)["x_unit"] is None and chart_of(d)["y_unit"] is None
    and [b["value"] for b in chart_of(d)["elements"]] == [100, 200, 300, 400]
    and [b["label"] for b in chart_of(d)["elements"]] == ["Author A", "Author B", "Author C", "Author D"]
    and [b["group"] for b in chart_of(d)["elements"]] == ["Books Sold"] * 4, "chart %s" % chart_of(d)))


def line_ok(d, o, e, r):
    c = chart_of(d)
    pts = c["elements"][0]["points"]
    datetime.datetime.fromisoformat(c["x_ticks"][0])
    datetime.datetime.fromisoformat(pts[0][0])
    return want(c["type"] == "line" and c["title"] == "Plot of sin(x) and cos(x)" and c["x_unit"] == "s"
                and c["y_unit"] == "Hz" and c["x_scale"] == "datetime" and c["y_scale"] == "linear"
                and all(isinstance(y, float) for y in c["y_ticks"]) and all(isinstance(t, str) for t in c["y_tick_labels"])
                and [e["label"] for e in c["elements"]] == ["sin(x)", "cos(x)"] and len(pts) == 100
                and all(isinstance(x, str) and isinstance(y, float) for x, y in pts)
                and results(d)[0]["text"] == "<Figure size 1000x600 with 1 Axes>", "chart %s" % str(c)[:400])


case("chart_line_datetime", PLT + """
dates = [datetime.datetime(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
x = np.linspace(0, 2 * np.pi, 100)
plt.figure(figsize=(10, 6))
plt.plot(dates, np.sin(x), label='sin(x)'); plt.plot(dates, np.cos(x), label='cos(x)')
plt.xlabel("Time (s)"); plt.ylabel("Amplitude (Hz)"); plt.title('Plot of sin(x) and cos(x)')
plt.show()""", line_ok)
case("chart_log", PLT + """
x = np.linspace(0, 100, 100)
plt.figure(figsize=(10, 6)); plt.plot(x, np.exp(x), label='y = e^x'); plt.yscale('log')
plt.xlabel('X-axis'); plt.ylabel('Y-axis (log scale)'); plt.title('Chart with Log Scale on Y-axis')
plt.legend(); plt.grid(True); plt.show()""", lambda d, o, e, r: want(
    chart_of(d)["type"] == "line" and chart_of(d)["x_unit"] is None and chart_of(d)["y_unit"] == "log scale"
    and chart_of(d)["x_scale"] == "linear" and chart_of(d)["y_scale"] == "log"
    and len(chart_of(d)["elements"]) == 1 and chart_of(d)["elements"][0]["label"] == "y = e^x"
    and len(chart_of(d)["elements"][0]["points"]) == 100, "chart %s" % str(chart_of(d))[:400]))
case("chart_pie", PLT + """
fig, ax = plt.subplots(figsize=(8, 8))
ax.pie([90, 10], labels=["No", "No, in blue"], autopct='%1.1f%%', startangle=90)
ax.axis('equal'); plt.title('Will I wake up early tomorrow?'); plt.show()""", lambda d, o, e, r: want(
    chart_of(d) == {"type": "pie", "title": "Will I wake up early tomorrow?", "elements": [
        {"label": "No", "angle": 324, "radius": 1}, {"label": "No, in blue", "angle": 36, "radius": 1}]},
    "chart %s" % chart_of(d)))
case("chart_box_and_whisker", PLT + """
data = {'Class A': [85, 90, 78, 92, 88], 'Class B': [95, 89, 76, 91, 84, 87], 'Class C': [75, 82, 88, 79, 86]}
fig, ax = plt.subplots(figsize=(10, 6))
ax.set_title('Exam Scores Distribution'); ax.set_xlabel('Class'); ax.set_ylabel('Score')
ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)
plt.show()""", lambda d, o, e, r: want(
    chart_of(d)["type"] == "box_and_whisker" and chart_of(d)["x_label"] == "Class"
    and [(b["label"], b["min"], b["first_quartile"], b["median"], b["third_quartile"], b["max"], b["outliers"])
         for b in chart_of(d)["elements"]] == [("Class A", 78, 85, 88, 90, 92, []), ("Class B", 84, 84.75, 88, 90.5, 95, [76]),
                                               ("Class C", 75, 79, 82, 86, 88, [])], "chart %s" % chart_of(d)))
case("chart_scatter", PLT + """
plt.xlabel("A"); plt.ylabel("B")
plt.scatter(np.random.rand(5), np.random.rand(5), c='blue', label='Dataset 1')
plt.scatter(np.random.rand(10), np.random.rand(10), c='red', label='Dataset 2')
plt.show()""", lambda d, o, e, r: want(
    chart_of(d)["type"] == "scatter" and chart_of(d)["title"] is None and chart_of(d)["x_label"] == "A"
    and [(s["label"], len(s["points"])) for s in chart_of(d)["elements"]] == [("Dataset 1", 5), ("Dataset 2", 10)]
    and chart_of(d)["x_scale"] == "linear", "chart %s" % str(chart_of(d))[:400]))
case("chart_superchart", PLT + """
fig, axs = plt.subplots(1, 2, figsize=(10, 8)); fig.suptitle('Multiple Charts Example', fontsize=16)
x1 = np.linspace(0, 10, 100); axs[0].plot(x1, np.sin(x1), 'r'); axs[0].set_title('Sine Wave'); axs[0].grid(True)
axs[1].scatter(np.random.rand(5), np.random.rand(5), c='blue', label='Dataset 1')
axs[1].set_xlabel('X'); axs[1].set_ylabel('Y'); axs[1].set_title('Scatter Plot'); axs[1].grid(True)
plt.show()""", lambda d, o, e, r: want(
    chart_of(d)["type"] == "superchart" and chart_of(d)["title"] == "Multiple Charts Example"
    and [(c["type"], c["title"], c["x_label"], len(c["elements"][0]["points"])) for c in chart_of(d)["elements"]]
    == [("line", "Sine Wave", None, 100), ("scatter", "Scatter Plot", "X", 5)], "chart %s" % str(chart_of(d))[:400]))
case("chart_unknown", PLT + """
fig, ax = plt.subplots()
ax.add_artist(plt.Circle((0, 0), 1, fill=False)); ax.add_artist(plt.Circle((0, 0), 2, fill=False))
ax.grid(True); plt.title('Two Concentric Circles'); plt.show()""", lambda d, o, e, r: want(
    chart_of(d) == {"type": "unknown", "title": "Two Concentric Circles", "elements": []}, "chart %s" % chart_of(d)))
case("chart_categorical", PLT + "plt.figure(); plt.plot([1, 2, 3, 4, 5], ['A', 'B', 'C', 'D', 'E']); plt.show()",
     lambda d, o, e, r: want(chart_of(d)["x_scale"] == "linear" and chart_of(d)["y_scale"] == "categorical",
                             "chart %s" % str(chart_of(d))[:300]))
case("chart_datetime_scale_indented", """
    import numpy as np
    import matplotlib.pyplot as plt
    import datetime
    dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
    y_sin = np.sin(np.linspace(0, 2*np.pi, 100))
    plt.figure(figsize=(10, 6))
    plt.plot(dates, y_sin, label='sin(x)')
    plt.show()
    """, lambda d, o, e, r: want(chart_of(d)["type"] == "line" and chart_of(d)["x_scale"] == "datetime"
                               and chart_of(d)["y_scale"] == "linear"
                               and chart_of(d)["elements"][0]["points"][0][0] == "2023-09-01", "chart %s" % str(chart_of(d))[:300]))
case("chart_blank", PLT + "fig, ax = plt.subplots()",
     lambda d, o, e, r: want(len(results(d)) == 1 and "chart" not in results(d)[0] and "png" in results(d)[0]
                             and results(d)[0]["text"] == "<Figure size 640x480 with 1 Axes>", "results %s" % str(results(d))[:300]))
case("chart_bar_groups", PLT + """
fig, ax = plt.subplots()
ax.bar([-0.2, 0.8], [3, 4], width=0.4, label='2023'); ax.bar([0.2, 1.2], [5, 6], width=0.4)
ax.bar([5], [1], width=0.4, label='far')
ax.set_xticks([0, 1], ['x', 'y'])
plt.show()""", lambda d, o, e, r: want(
    [(b["label"], b["group"], b["value"]) for b in chart_of(d)["elements"]]
    == [("x", "2023", 3), ("y", "2023", 4), ("x", "Group 2", 5), ("y", "Group 2", 6), ("5", "far", 1)], "chart %s" % chart_of(d)))
case("figure_order_and_file", PLT + "display('before')\nplt.plot([1, 2]); plt.show()\ndisplay('after')\nplt.plot([3, 1])\n'end'",
     lambda d, o, e, r: want([b.get("text", "")[:7] for b in results(d)] == ["before", "<Figure", "after", "<Figure", "end"]
                             and [f["path"] for f in d["figures"]] == ["/workspace/figure-%d-1.png" % r["n"], "/workspace/figure-%d-2.png" % r["n"]],
                             "results %s figures %s" % ([b.get("text") for b in results(d)], d["figures"])))
case("figure_file_same_png", "import base64\nbase64.b64encode(open('/workspace/figure-%d-1.png' % (_n - 1), 'rb').read()).decode()",
     lambda d, o, e, r: want(d["result"] == repr(results(r["prev"]["done"])[1]["png"]), "the file's bytes differ from the bundle's png"))
# -- notebook syntax -----------------------------------------------------------
case("dedent", "\n    a = 6\n    if a:\n        a *= 7\n    a", lambda d, o, e, r: want(d["result"] == "42", "done %s" % d))
case("bang_streams", "!echo first; sleep 2; echo second",
     lambda d, o, e, r: want(o == "first\nsecond\n" and r["first_stdout_s"] is not None and r["first_stdout_s"] < 1.5,
                             "stdout %r first after %s s" % (o, r["first_stdout_s"])))
case("bang_capture_and_expand", "n = 3\nlines = !seq {n}; echo $n >&2\nfor i in range(1):\n    !echo in-loop\nlines, lines.s, _exit_code",
     lambda d, o, e, r: want(d["result"] == "(['1', '2', '3', '3'], '1 2 3 3', 0)" and o == "in-loop\n", "done %s stdout %r" % (d["result"], o)))
case("magic_lookalikes_untouched", "s = '''\n!not\n%not\n'''\nt = (1\n  %\n  1)\ns, t", lambda d, o, e, r: want(d["result"] == "('\\n!not\\n%not\\n', 0)", "done %s" % d))
case("line_magics", "%cd /tmp\nhere = %pwd\n%env NB_X=1\nv = %env NB_X\n%matplotlib inline\n%ls -d /tmp\nhere, v",
     lambda d, o, e, r: want(d["result"] == "('/tmp', '1')" and o == "/tmp\nenv: NB_X=1\n/tmp/\n", "done %s stdout %r" % (d["result"], o)))
case("time_magics", "%time t = sum(range(10))\n%timeit -n 3 -r 2 t + 1\nt",
     lambda d, o, e, r: want(d["result"] == "45" and "CPU times: user" in o and "Wall time:" in o
                             and "(mean \u00b1 std. dev. of 2 runs, 3 loops each)" in o, "done %s stdout %r" % (d["result"], o)))
case("pip_magic", "%pip --version", lambda d, o, e, r: want(o.startswith("pip ") and "restart the kernel" in o, "stdout %r" % o))
case("who_and_reset", "%reset -f\nkeep = 1\nimport os\n%who", lambda d, o, e, r: want(o == "keep\tos\n", "stdout %r" % o))
case("unknown_line_magic", "%nosuchmagic 1",
     lambda d, o, e, r: want(d["status"] == "error" and d["error"]["name"] == "UsageError"
                             and "%nosuchmagic" in d["error"]["value"], "error %s" % d["error"]))
case("cell_bash", "%%bash\necho out; echo err >&2; echo $0", lambda d, o, e, r: want(o == "out\nbash\n" and e == "err\n", "out %r err %r" % (o, e)))
case("cell_sh", "%%sh\necho sh-out", lambda d, o, e, r: want(o == "sh-out\n", "out %r" % o))
case("cell_writefile", "%%writefile /tmp/nb.txt\nline1\n", lambda d, o, e, r: want(o == "Writing /tmp/nb.txt\n", "out %r" % o))
case("cell_writefile_append", "%%writefile -a /tmp/nb.txt\nline2\n", lambda d, o, e, r: want(o == "Appending to /tmp/nb.txt\n", "out %r" % o))
case("cell_writefile_content", "open('/tmp/nb.txt').read()", lambda d, o, e, r: want(d["result"] == repr("line1\nline2\n"), "done %s" % d["result"]))
case("cell_time", "%%time\nz = 2\nz * 3", lambda d, o, e, r: want(d["result"] == "6" and "Wall time" in o, "done %s out %r" % (d["result"], o)))
case("cell_capture", "%%capture cap\nprint('hidden')\ndisplay('shown')", lambda d, o, e, r: want(o == "" and results(d) == [], "out %r results %s" % (o, results(d))))
case("cell_capture_kept", "cap.stdout, cap.outputs", lambda d, o, e, r: want(d["result"] == "('hidden\\n', [{'text': \"'shown'\"}])", "done %s" % d["result"]))
for kind, body in (("html", "<b>b</b>"), ("markdown", "# T"), ("javascript", "var a = 1;"), ("latex", "$x^2$"), ("svg", "<svg></svg>")):
    case("cell_" + kind, "%%" + kind + "\n" + body,
         lambda d, o, e, r, kind=kind, body=body: want([{k: v.strip() for k, v in b.items()} for b in results(d)] == [{kind: body}],
                                                       "results %s" % results(d)))
case("unknown_cell_magic", "%%nosuchcell\nx", lambda d, o, e, r: want(d["status"] == "error" and "%%nosuchcell" in d["error"]["value"], "error %s" % d["error"]))
case("user_module_not_shadowed", "open('python_magics.py', 'w').write('VALUE = 42\\n')\n!true\nimport python_magics\npython_magics.VALUE",
     lambda d, o, e, r: want(d["result"] == "42", "done %s" % d))
case("interrupt_bang", "print('started', flush=True)\n!sleep 30",
     lambda d, o, e, r: want(d["status"] == "error" and d["interrupted"] is True and d["error"]["name"] == "KeyboardInterrupt", "done %s" % str(d)[:300]),
     interrupt_after=0.5)
case("interrupt_slow_repr", "class Slow:\n    def __repr__(self):\n        print('started', flush=True)\n        import time; time.sleep(30)\nSlow()",
     lambda d, o, e, r: want(d["interrupted"] is True and d["error"]["name"] == "KeyboardInterrupt", "done %s" % str(d)[:300]),
     interrupt_after=0.5)
case("interrupt_slow_figure", PLT + """
import time
from matplotlib.artist import Artist
class SlowArtist(Artist):
    def draw(self, renderer):
        print('started', flush=True)
        time.sleep(30)
plt.figure().add_artist(SlowArtist())""",
     lambda d, o, e, r: want(d["interrupted"] is True and d["error"]["name"] == "KeyboardInterrupt", "done %s" % str(d)[:300]),
     interrupt_after=0.5)
case("slow_figure_not_again", "len(plt.get_fignums())", lambda d, o, e, r: want(d["result"] == "0" and results(d)[0]["text"] == "0", "done %s" % str(d)[:300]))
case("after_interrupt", "keep", lambda d, o, e, r: want(d["result"] == "1", "done %s" % d))


def run_all():
    made = nsbox("create", IMAGE)
    sb = made.stdout.decode().strip().split("\n")[-1]
    if made.returncode != 0 or not sb:
        result("harness", False, "create: %s" % made.stderr.decode()[-300:])
        return
    try:
        nsbox("exec", sb, "--", "mkdir", "-p", "/tmp/nbdrv")
        drivers = os.path.join(ROOT, "mcp", "interp", "drivers")
        for f in sorted(os.listdir(drivers)):
            if f.startswith("python"):
                nsbox("cp", os.path.join(drivers, f), "%s:/tmp/nbdrv/%s" % (sb, f))
        nsbox("cp", os.path.join(HERE, "notebook_runner.py"), "%s:/tmp/nbdrv/runner.py" % sb)
        cells = [dict(c, code="_n = %d\n" % n + c["code"] if c["code"].startswith("import base64") else c["code"])
                 for n, (_, c, _) in enumerate(CASES, 1)]
        ran = nsbox("exec", "-i", sb, "--", "python3", "/tmp/nbdrv/runner.py", "/tmp/nbdrv/python.py",
                    stdin=json.dumps(cells).encode(), timeout=600)
        try:
            out = json.loads(ran.stdout)
        except ValueError:
            result("harness", False, "runner: rc %d %s" % (ran.returncode, ran.stderr.decode()[-300:]))
            return
        note("ready: %s" % out[0])
        prev = None
        for n, ((name, _, check), rec) in enumerate(zip(CASES, out[1:]), 1):
            d = rec["done"]
            rec["n"], rec["raw"], rec["prev"], prev = n, json.dumps(d), prev, rec
            try:
                why = "no done" if not d or "invalid" in d else check(d, rec["stdout"], rec["stderr"], rec)
            except Exception as exc:
                why = "%s: %s" % (type(exc).__name__, exc)
            result(name, why is None, "%s; stderr %r" % (why, rec["stderr"][-300:]))
        for name, _, _ in CASES[len(out) - 1:]:
            result(name, False, "no record (the runner stopped)")
    finally:
        nsbox("rm", sb)


run_all()
finish()
