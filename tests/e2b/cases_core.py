"""The ported E2B cases on running code: basic, callbacks, streaming,
statefulness, shell escapes, cwd, default kernels, data, display data,
images, execution count, custom repr (tests/e2b/lab.py has the mapping).
Each function is the translation of the E2B tests it is registered under;
JS, Python sync and Python async versions of one test share it."""
from lab import HOME, case, eq, ok, strip

JS, SY, AS = "js/tests/", "python/tests/sync/", "python/tests/async/"


# -- basic, statefulness ------------------------------------------------------
@case(JS + "basic.test.ts::basic", SY + "test_basic.py::test_basic",
      AS + "test_async_basic.py::test_basic")
def basic(lab):
    eq("text", lab.sandbox().run("x =1; x").text, "1")


# E2B's secure sandbox without public traffic: nsbox's sandbox_create
# without network has no traffic at all (its default).
@case(JS + "basic.test.ts::secure access", SY + "test_basic.py::test_secure_access",
      AS + "test_async_basic.py::test_secure_access")
def secure_access(lab):
    eq("text", lab.sandbox().run("x =1; x").text, "1")


@case(JS + "statefulness.test.ts", SY + "test_statefulness.py",
      AS + "test_async_statefulness.py")
def statefulness(lab):
    b = lab.sandbox()
    b.run("test_stateful = 1").need_ok()
    eq("text", b.run("test_stateful+=1; test_stateful").text, "2")


# -- callbacks: on_result, on_error, on_stdout, on_stderr ---------------------
@case(JS + "callbacks.test.ts::callback results", SY + "test_callbacks.py::test_resuls",
      AS + "test_async_callbacks.py::test_results",
      AS + "test_async_callbacks.py::test_results_sync_callback")
def callback_results(lab):
    ex = lab.sandbox().run("x = 1;x")
    eq("the number of results (on_result calls)", len(ex.results), 1)
    eq("results[0].text", ex.result(0).get("text"), "1")


@case(JS + "callbacks.test.ts::callback error", SY + "test_callbacks.py::test_error",
      AS + "test_async_callbacks.py::test_error")
def callback_error(lab):
    err = lab.sandbox().run("xyz").error
    ok(isinstance(err, dict), lambda: f"error is {err!r} (on_error not called)")
    eq("error.name", err.get("name"), "NameError")


def streamed(lab, code, stream, want):
    """on_stdout/on_stderr as an MCP client gives them: the progress
    messages naming the stream as they come, then the rest of the record's
    stream (a run over within 20 ms streams nothing: docs/tools.md,
    "Progress"); the streamed texts are a prefix of the record.  One
    callback with the line, and the record's stream is the line (E2B's
    logs)."""
    ex = lab.sandbox().run(code, progress=True)
    texts = ex.stream(stream)
    rec = ex.need_ok().sc.get(stream) or ""
    sent = "".join(texts)
    ok(rec.startswith(sent), lambda: f"{stream}: streamed {sent!r} is not a prefix of {rec!r}")
    got = texts + ([rec[len(sent):]] if len(rec) > len(sent) else [])
    ok(got == [want], lambda: f"{stream} callbacks {got!r}, expected [{want!r}] "
       f"(messages naming no stream: {ex.unnamed()!r:.200})")
    eq(stream, rec, want)


@case(JS + "callbacks.test.ts::callback stdout", SY + "test_callbacks.py::test_stdout",
      AS + "test_async_callbacks.py::test_stdout")
def callback_stdout(lab):
    streamed(lab, "print('Hello from e2b')", "stdout", "Hello from e2b\n")


@case(JS + "callbacks.test.ts::callback stderr", SY + "test_callbacks.py::test_stderr",
      AS + "test_async_callbacks.py::test_stderr")
def callback_stderr(lab):
    streamed(lab, 'import sys;print("This is an error message", file=sys.stderr)',
             "stderr", "This is an error message\n")


# -- streaming ----------------------------------------------------------------
@case(JS + "streaming.test.ts::streaming output", SY + "test_streaming.py::test_streaming_output",
      AS + "test_async_streaming.py::test_streaming_output")
def streaming_output(lab):
    streamed(lab, "print(1)", "stdout", "1\n")


@case(JS + "streaming.test.ts::streaming error", SY + "test_streaming.py::test_streaming_error",
      AS + "test_async_streaming.py::test_streaming_error")
def streaming_error(lab):
    streamed(lab, "import sys;print(1, file=sys.stderr)", "stderr", "1\n")


PLOT_THEN_X = """
    import matplotlib.pyplot as plt
    import numpy as np

    x = np.linspace(0, 20, 100)
    y = np.sin(x)

    plt.plot(x, y)
    plt.show()

    x
    """


@case(JS + "streaming.test.ts::streaming result", SY + "test_streaming.py::test_streaming_result",
      AS + "test_async_streaming.py::test_streaming_result")
def streaming_result(lab):
    ex = lab.sandbox().run(PLOT_THEN_X)
    eq("the number of results (the figure, then x)", len(ex.results), 2)


# -- shell escapes, cwd, execution count --------------------------------------
@case(JS + "bash.test.ts", SY + "test_bash.py", AS + "test_async_bash.py")
def bang_pwd(lab):
    eq("stdout", strip(lab.sandbox().run("!pwd").stdout), HOME)


@case(JS + "cwd.test.ts::cwd python", SY + "test_cwd.py::test_cwd_python",
      AS + "test_async_cwd.py::test_cwd_python")
def cwd_python(lab):
    ex = lab.sandbox().run("from pathlib import Path; print(Path.cwd())")
    eq("stdout", strip(ex.stdout), HOME)


@case(JS + "cwd.test.ts::cwd javascript", SY + "test_cwd.py::test_cwd_javascript",
      AS + "test_async_cwd.py::test_cwd_javascript")
def cwd_javascript(lab):
    eq("text", lab.sandbox().run("process.cwd()", language="js").text, HOME)


@case(JS + "cwd.test.ts::cwd typescript", SY + "test_cwd.py::test_cwd_typescript",
      AS + "test_async_cwd.py::test_cwd_typescript")
def cwd_typescript(lab):
    eq("text", lab.sandbox().run("process.cwd()", language="ts").text, HOME)


@case(JS + "cwd.test.ts::cwd bash", SY + "test_cwd.py::test_cwd_bash",
      AS + "test_async_cwd.py::test_cwd_bash")
def cwd_bash(lab):
    eq("stdout", strip(lab.sandbox().run("pwd", language="bash").stdout), HOME)


# R and Java: their kernels' sandboxes are of the R/Java image (lab.py).
@case(JS + "cwd.test.ts::cwd r", SY + "test_cwd.py::test_cwd_r", AS + "test_async_cwd.py::test_cwd_r")
def cwd_r(lab):
    ex = lab.sandbox(kernel="r").run("getwd()", language="r")
    eq("results[0].text", strip(ex.result(0).get("text")), '[1] "%s"' % HOME)


@case(JS + "cwd.test.ts::cwd java", SY + "test_cwd.py::test_cwd_java",
      AS + "test_async_cwd.py::test_cwd_java")
def cwd_java(lab):
    ex = lab.sandbox(kernel="java").run('System.getProperty("user.dir")', language="java")
    eq("results[0].text", strip(ex.result(0).get("text")), HOME)


@case(JS + "executionCount.test.ts")
def execution_count_js(lab):
    b = lab.sandbox()
    b.run("!pwd").need_ok()
    eq("execution_count", b.run("!pwd").need_ok().sc.get("execution_count"), 2)


# The first cell is not Python (a SyntaxError): it still counts.
@case(SY + "test_execution_count.py",
      AS + "test_async_execution_count.py")
def execution_count_py(lab):
    b = lab.sandbox()
    b.run("echo 'E2B is awesome!'").need_ok()
    eq("execution_count", b.run("!pwd").need_ok().sc.get("execution_count"), 2)


# -- default kernels: JavaScript, TypeScript ----------------------------------
@case(JS + "defaultKernels.test.ts::test js kernel", SY + "test_default_kernels.py::test_js_kernel",
      AS + "test_async_default_kernels.py::test_js_kernel")
def js_kernel(lab):
    eq("stdout", lab.sandbox().run("console.log('Hello, World!')", language="js").stdout,
       "Hello, World!\n")


@case(SY + "test_default_kernels.py::test_r_kernel")
def r_kernel(lab):
    ex = lab.sandbox(kernel="r").run('print("Hello, World!")', language="r")
    eq("stdout", ex.stdout, '[1] "Hello, World!"\n')


# E2B reads logs.stdout[0] == "Hello, World!" (its Java kernel sends the
# newline as a chunk of its own); nsbox's stdout is the chunks joined.
@case(SY + "test_default_kernels.py::test_java_kernel")
def java_kernel(lab):
    ex = lab.sandbox(kernel="java").run('System.out.println("Hello, World!")', language="java")
    eq("stdout", ex.stdout, "Hello, World!\n")


ESM = """
    import { readFileSync } from 'fs'
    console.log(typeof readFileSync)
    """


@case(JS + "defaultKernels.test.ts::test esm imports",
      SY + "test_default_kernels.py::test_js_esm_imports",
      AS + "test_async_default_kernels.py::test_js_esm_imports")
def js_esm_imports(lab):
    eq("stdout", lab.sandbox().run(ESM, language="js").stdout, "function\n")


@case(JS + "defaultKernels.test.ts::test top-level await and promise resolution",
      SY + "test_default_kernels.py::test_js_top_level_await",
      AS + "test_async_default_kernels.py::test_js_top_level_await")
def js_top_level_await(lab):
    ex = lab.sandbox().run("\n    await Promise.resolve('Hello World!')\n    ", language="js")
    eq("text", ex.text, "Hello World!")


@case(JS + "defaultKernels.test.ts::test ts kernel", SY + "test_default_kernels.py::test_ts_kernel",
      AS + "test_async_default_kernels.py::test_ts_kernel")
def ts_kernel(lab):
    ex = lab.sandbox().run("const message: string = 'Hello, World!'; console.log(message);",
                           language="ts")
    eq("stdout", ex.stdout, "Hello, World!\n")


# -- data, display data, images, custom repr ----------------------------------
DATAFRAME = """
        import pandas as pd
        pd.DataFrame({"a": [1, 2, 3]})
        """


@case(JS + "data.test.ts", SY + "test_data.py", AS + "test_async_data.py")
def data(lab):
    d = lab.sandbox().run(DATAFRAME).result(0).get("data")
    ok(d, lambda: f"results[0].data is {d!r}")
    ok(isinstance(d, dict) and "a" in d and len(d["a"]) == 3,
       lambda: f"results[0].data is {str(d)[:200]}, expected a column a of 3")


def image(ex, bundle, key="png"):
    """A result's png as nsbox carries it: {"mime_type", "bytes", "content":
    I} with content[I] the image, or {"uri"} for one over the inline cap."""
    v = bundle.get(key)
    ok(isinstance(v, dict), lambda: f"results[0].{key} is {str(v)[:100]} (keys {sorted(bundle)})")
    if "uri" in v:
        ok(any(c.get("type") == "resource_link" and c.get("uri") == v["uri"] for c in ex.content),
           lambda: f"{key} names {v['uri']}, no resource_link in content")
        return
    i = v.get("content")
    ok(isinstance(i, int) and 0 <= i < len(ex.content), lambda: f"{key}.content is {i!r}")
    c = ex.content[i]
    ok(c.get("type") == "image" and c.get("mimeType") == f"image/{key}" and c.get("data"),
       lambda: f"content[{i}] is not an image/{key}: {str(c)[:150]}")


PLOT = """
        import matplotlib.pyplot as plt
        import numpy as np

        x = np.linspace(0, 20, 100)
        y = np.sin(x)

        plt.plot(x, y)
        plt.show()
        """


@case(JS + "displayData.test.ts", SY + "test_display_data.py",
      AS + "test_async_display_data.py")
def display_data(lab):
    ex = lab.sandbox().run(PLOT)
    r = ex.result(0)
    image(ex, r)
    ok(r.get("text"), lambda: f"results[0].text is {r.get('text')!r}")
    ok(not r.get("extra"), lambda: f"results[0].extra is {r.get('extra')!r}")


PIL = """
    import numpy
    from PIL import Image

    imarray = numpy.random.rand(16,16,3) * 255
    image = Image.fromarray(imarray.astype('uint8')).convert('RGBA')

    """


@case(JS + "images/bar.test.ts::test show image", "python/tests/images/test_images.py::test_show_image")
def image_show(lab):
    ex = lab.sandbox().run(PIL + "image.show()\n    print(\"Image shown.\")\n    ")
    image(ex, ex.result(0))


@case(JS + "images/bar.test.ts::test image represent",
      "python/tests/images/test_images.py::test_image_as_last_command")
def image_last(lab):
    ex = lab.sandbox().run(PIL + "image\n    ")
    image(ex, ex.result(0))


@case(JS + "images/bar.test.ts::get image on save",
      "python/tests/images/test_images.py::test_get_image_on_save")
def image_save(lab):
    ex = lab.sandbox().run(PIL + "image.save(\"test.png\")\n    print(\"Image saved.\")\n    ")
    image(ex, ex.result(0))


FORMATS = ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json",
           "javascript", "data", "chart")
CUSTOM = """
from IPython.display import display

display({'text/latex': r'\text{CustomReprObject}'}, raw=True)
"""


@case(SY + "test_custom_repr_object.py", AS + "test_async_custom_repr_object.py")
def custom_repr(lab):
    r = lab.sandbox().run(CUSTOM).result(0)
    formats = [k for k in FORMATS if r.get(k)] + list(r.get("extra") or {})
    eq("results[0]'s formats", formats, ["latex"])
