# nsbox's Python driver, the IPython stand-in: what python.py's
# IPythonStandIn finder puts in the modules IPython, IPython.display,
# IPython.core and IPython.core.display when the image has no IPython, so
# that notebook code such as `from IPython.display import display, HTML`
# runs and makes the same bundles as the driver's display().  Only the
# display side of IPython: get_ipython() is None (no kernel, no shell).
# Loaded by python.py from its own directory (never through sys.path).
# Standard library only.
import json
import os

MODULE = "IPython.core.display"  # where IPython has these classes


class DisplayObject:
    """IPython's DisplayObject: data, or a file's content (filename, or
    data naming an existing file).  A url is kept, never fetched."""

    binary = False

    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if isinstance(data, (str, os.PathLike)) and url is None and filename is None:
            text = os.fspath(data)
            if text.startswith(("http://", "https://")):
                url, data = text, None
            elif "\n" not in text and len(text) < 4096 and os.path.isfile(text):
                filename, data = text, None
        self.data, self.url, self.filename = data, url, filename
        self.metadata = metadata or {}
        if filename is not None:
            self.reload()

    def reload(self):
        if self.filename is not None:
            with open(self.filename, "rb" if self.binary else "r") as f:
                self.data = f.read()

    def __repr__(self):
        return "<%s.%s object>" % (type(self).__module__, type(self).__name__)


class TextDisplayObject(DisplayObject):
    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if data is not None and not isinstance(data, (str, os.PathLike)):
            raise TypeError("%s expects text, not %r" % (type(self).__name__, data))
        super().__init__(data, url, filename, metadata)

    def text(self):
        return self.data if isinstance(self.data, str) else ""


class Pretty(TextDisplayObject):
    def __repr__(self):
        return self.text()


class HTML(TextDisplayObject):
    def _repr_html_(self):
        return self.text()


class Markdown(TextDisplayObject):
    def _repr_markdown_(self):
        return self.text()


class Latex(TextDisplayObject):
    def _repr_latex_(self):
        return self.text()


class Math(TextDisplayObject):
    def _repr_latex_(self):
        s = self.text().strip("$")
        return "$\\displaystyle %s$" % s


class SVG(DisplayObject):
    def _repr_svg_(self):
        data = self.data
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


class Javascript(TextDisplayObject):
    def __init__(self, data=None, url=None, filename=None, lib=None, css=None):
        super().__init__(data, url, filename)
        self.lib, self.css = lib, css

    def _repr_javascript_(self):
        return self.text()


class JSON(DisplayObject):
    def __init__(self, data=None, url=None, filename=None, expanded=False, metadata=None, root="root", **kwargs):
        super().__init__(data, url, filename, metadata)
        if isinstance(self.data, str):
            self.data = json.loads(self.data)
        self.metadata = dict(self.metadata, expanded=expanded, root=root, **kwargs)

    def _repr_json_(self):
        return self.data, self.metadata


class Image(DisplayObject):
    """A png or jpeg image: bytes, a file, or (not embedded) a url."""

    binary = True
    MAGIC = {b"\x89PNG": "png", b"\xff\xd8": "jpeg"}

    def __init__(self, data=None, url=None, filename=None, format=None, embed=None, width=None, height=None,
                 retina=False, unconfined=False, metadata=None, alt=None):
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data)
        super().__init__(data, url, filename, metadata)
        name = filename or url or ""
        ext = name.rsplit(".", 1)[-1].lower() if "." in name else None
        if format is None and isinstance(self.data, bytes):
            format = next((f for m, f in self.MAGIC.items() if self.data.startswith(m)), None)
        self.format = {"jpg": "jpeg"}.get(format or ext, format or ext or "png")
        self.embed = embed if embed is not None else self.data is not None
        self.width, self.height, self.alt = width, height, alt

    def _repr_png_(self):
        return self.data if self.embed and self.format == "png" else None

    def _repr_jpeg_(self):
        return self.data if self.embed and self.format == "jpeg" else None

    def _repr_html_(self):
        if self.embed or not self.url:
            return None
        size = "".join(' %s="%s"' % (k, v) for k, v in (("width", self.width), ("height", self.height)) if v)
        return '<img src="%s"%s/>' % (self.url, size)


class IFrame:
    def __init__(self, src, width, height, extras=None, **kwargs):
        self.src, self.width, self.height = src, width, height

    def _repr_html_(self):
        return '<iframe width="%s" height="%s" src="%s" frameborder="0" allowfullscreen></iframe>' % (
            self.width, self.height, self.src)


def clear_output(wait=False):
    """Without a front end there is no output area to clear: nothing."""


def get_ipython():
    """No IPython shell runs in nsbox's driver."""
    return None


CLASSES = (DisplayObject, TextDisplayObject, Pretty, HTML, Markdown, Latex, Math, SVG, Javascript, JSON,
           Image, IFrame)
for _cls in CLASSES:
    _cls.__module__ = MODULE


def display_of(display, kind):
    """display_html(...) and the like: raw=True means the objects are the
    MIME type's data already."""
    mime = {"html": "text/html", "markdown": "text/markdown", "latex": "text/latex", "svg": "image/svg+xml",
            "json": "application/json", "javascript": "application/javascript", "png": "image/png",
            "jpeg": "image/jpeg", "pretty": "text/plain"}[kind]

    def display_kind(*objs, raw=False, metadata=None):
        for obj in objs:
            display({mime: obj} if raw else obj, raw=raw)

    display_kind.__name__ = "display_" + kind
    return display_kind


def fill(module, display):
    """module (one of IPython, IPython.display, IPython.core,
    IPython.core.display) made the stand-in; display: the driver's."""
    ns = module.__dict__
    ns["__nsbox_stand_in__"] = True
    ns["get_ipython"] = get_ipython
    if module.__name__ == "IPython":
        import importlib

        ns["__version__"] = "0+nsbox"  # not IPython: libraries that check should not take it for one
        ns["display"] = importlib.import_module("IPython.display")
        importlib.import_module("IPython.core.display")
        return
    if module.__name__ == "IPython.core":
        return
    ns["display"] = display
    ns["clear_output"] = clear_output
    for cls in CLASSES:
        ns[cls.__name__] = cls
    for kind in ("html", "markdown", "latex", "svg", "json", "javascript", "png", "jpeg", "pretty"):
        ns["display_" + kind] = display_of(display, kind)
