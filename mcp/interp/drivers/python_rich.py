# nsbox's Python driver, rich output: an object -> a display BUNDLE (a JSON
# object of MIME data, docs/interpreters.md), made JSON-safe for the host's
# strict parser.  Loaded by python.py from its own directory (never through
# sys.path).  Standard library only: pandas, PIL and matplotlib objects are
# recognised through sys.modules, never imported here.
import base64
import datetime
import decimal
import math
import sys

BUNDLE_CAP = 8 << 20  # one bundle's total bytes
TEXT_CAP = 64 * 1024  # text/plain, as the old `result`
DEPTH_CAP = 64
BINARY = ("png", "jpeg", "pdf")
DATA_CELLS_CAP = 200000  # a DataFrame's `data` only up to this many cells

# MIME type -> BUNDLE key; anything else goes to "extra".
KEYS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "text/latex": "latex",
    "application/javascript": "javascript",
    "text/javascript": "javascript",
    "application/json": "json",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
}
REPR_METHODS = (
    ("_repr_html_", "html"),
    ("_repr_markdown_", "markdown"),
    ("_repr_svg_", "svg"),
    ("_repr_png_", "png"),
    ("_repr_jpeg_", "jpeg"),
    ("_repr_latex_", "latex"),
    ("_repr_json_", "json"),
    ("_repr_javascript_", "javascript"),
    ("_repr_pdf_", "pdf"),
)
MIME_OF = {"png": "image/png", "jpeg": "image/jpeg", "pdf": "application/pdf"}


# clean(text, cap), text as valid UTF-8 without NUL at most cap bytes, is
# the driver's own (python.py): load_helper puts it here before this runs.


def jsonable(value, depth=0):
    """value as plain JSON the host accepts: strings without NUL, no NaN or
    infinity (null), integers within 64 bits, string keys without
    duplicates; datetimes as ISO strings; anything else as its str()."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clean(value, BUNDLE_CAP)
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 63) else float(value) if abs(value) < 1e308 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > DEPTH_CAP:
        return clean(short_repr(value), TEXT_CAP)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else str(jsonable(k, depth + 1))
            key = clean(key, TEXT_CAP)
            if key not in out:
                out[key] = jsonable(v, depth + 1)
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat() if value == value else None  # pandas.NaT is a datetime
    if isinstance(value, decimal.Decimal):
        return jsonable(float(value), depth)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    kind = type(value).__module__ or ""
    if kind.startswith("numpy") or kind.startswith("pandas"):
        return numpy_like(value, depth)
    return clean(short_repr(value, str), TEXT_CAP)


def numpy_like(value, depth):
    if value is getattr(sys.modules.get("pandas"), "NaT", object()):
        return None
    if hasattr(value, "isoformat"):  # pandas.Timestamp
        return value.isoformat()
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.datetime64):
        return None if np.isnat(value) else str(value.astype("datetime64[us]"))
    if np is not None and isinstance(value, np.timedelta64):
        return str(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        try:
            return jsonable(value.tolist(), depth + 1)
        except Exception:
            pass
    return clean(short_repr(value, str), TEXT_CAP)


def short_repr(value, fn=repr):
    try:
        return fn(value)
    except Exception as exc:
        return "<%s: %s failed: %s>" % (type(value).__name__, fn.__name__, type(exc).__name__)


def is_instance_of(value, module, name):
    mod = sys.modules.get(module)
    cls = getattr(mod, name, None) if mod is not None else None
    return isinstance(cls, type) and isinstance(value, cls)


def as_binary(data):
    if isinstance(data, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(data)).decode("ascii")
    if isinstance(data, str):  # already base64, as IPython's formatters allow
        return "".join(data.split())
    return None


def put(bundle, key, data):
    """Adds one MIME item to bundle (data None: nothing)."""
    if data is None:
        return
    if isinstance(data, tuple) and len(data) == 2:  # (data, metadata)
        data = data[0]
    if key in BINARY:
        data = as_binary(data)
    elif key not in ("json",) and not isinstance(data, str):
        data = short_repr(data, str)
    if data is not None:
        bundle[key] = data


def from_mimebundle(obj, bundle):
    try:
        got = obj._repr_mimebundle_(include=None, exclude=None)
    except TypeError:
        got = obj._repr_mimebundle_()
    if isinstance(got, tuple) and len(got) == 2:
        got = got[0]
    if not isinstance(got, dict):
        return
    for mime, data in got.items():
        if not isinstance(mime, str):
            continue
        key = KEYS.get(mime)
        if key is not None:
            put(bundle, key, data)
        else:
            if isinstance(data, (bytes, bytearray)):
                data = as_binary(data)
            bundle.setdefault("extra", {})[mime] = data


def bundle_of(obj, figure_bundle=None):
    """The BUNDLE for obj (without is_main_result).  figure_bundle: a
    function making a matplotlib figure's bundle, or None.  A failing
    _repr_*_ method only loses its MIME type; repr() failing raises (the
    cell's error, as in the REPL)."""
    if figure_bundle is not None and is_instance_of(obj, "matplotlib.figure", "Figure"):
        return figure_bundle(obj)
    bundle = {}
    if hasattr(type(obj), "_repr_mimebundle_"):
        try:
            from_mimebundle(obj, bundle)
        except Exception:
            pass
    for method, key in REPR_METHODS:
        if key in bundle or not hasattr(type(obj), method):
            continue
        try:
            put(bundle, key, getattr(obj, method)())
        except Exception:
            pass
    if "png" not in bundle and is_instance_of(obj, "PIL.Image", "Image"):
        put(bundle, "png", pil_png(obj))
    if is_instance_of(obj, "pandas", "DataFrame"):
        data = frame_data(obj)
        if data is not None:
            bundle["data"] = data
    if "text" not in bundle:
        bundle["text"] = repr(obj)
    bundle["text"] = clean(bundle["text"], TEXT_CAP)
    return bundle


def pil_png(image):
    import io

    out = io.BytesIO()
    try:
        image.save(out, format="PNG")
    except Exception:
        return None
    return out.getvalue()


def frame_data(frame):
    """df.to_dict(orient="list"), JSON-safe (None when too big)."""
    try:
        if frame.size > DATA_CELLS_CAP:
            return None
        return frame.to_dict(orient="list")
    except Exception:
        return None


def raw_bundle(data):
    """display(dict, raw=True): data is a MIME bundle already."""
    bundle = {}
    if isinstance(data, dict):
        for mime, value in data.items():
            key = KEYS.get(mime) if isinstance(mime, str) else None
            if key is not None:
                put(bundle, key, value)
            elif isinstance(mime, str):
                bundle.setdefault("extra", {})[mime] = value
    return bundle


def e2b_text(text):
    """A bundle's text as E2B gives it (its Result model): a text/plain
    that starts and ends with the same quote, ' or ", loses the first and
    the last character, whatever is between (so a str's repr becomes the
    string, escapes still escaped; "'a' 'b'" becomes "a' 'b")."""
    if text and ((text[0] == "'" and text[-1] == "'") or (text[0] == '"' and text[-1] == '"')):
        return text[1:-1]
    return text


def size_of(value):
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(size_of(v) + len(k) for k, v in value.items())
    if isinstance(value, list):
        return sum(size_of(v) for v in value) + len(value)
    return 8


def capped(bundle, budget):
    """bundle made JSON-safe and within min(BUNDLE_CAP, budget) bytes: the
    largest items are dropped (named in extra["nsbox/dropped"]) until it fits.
    Returns (bundle, its size)."""
    safe = jsonable(bundle)
    limit = min(BUNDLE_CAP, budget)
    size = size_of(safe)
    notes = []
    while size > limit:
        items = [(size_of(v), k) for k, v in safe.items() if k not in ("is_main_result", "extra")]
        if not items:
            safe.pop("extra", None)
            break
        n, key = max(items)
        del safe[key]
        size -= n
        notes.append("%s: %d bytes over the cap of %d bytes" % (MIME_OF.get(key, key), n, limit))
    if notes:
        safe.setdefault("extra", {})["nsbox/dropped"] = "; ".join(notes)
    if not safe.get("extra"):
        safe.pop("extra", None)
    return safe, size_of(safe)
