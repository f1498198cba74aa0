# nsbox's Python driver, charts: a matplotlib Figure -> its display bundle
# (png + text + chart), the chart being the figure's data as a CHART object
# (docs/interpreters.md; the same JSON as E2B's charts).  Loaded by
# python.py only when a figure exists, so matplotlib is already imported;
# nothing here imports it at the driver's start.  Every value goes through
# python_rich.jsonable afterwards (NaN -> null, numpy -> python).
import base64
import io
import math
import re
import sys

UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")
POINTS_CAP = 100000  # points of one line or scatter kept in a chart


def figure_bundle(fig):
    """{"png", "text", "chart"} of fig (chart absent for a blank figure);
    fig is drawn by savefig first, so tick labels are known."""
    out = io.BytesIO()
    fig.savefig(out, format="png")
    bundle = {"png": base64.b64encode(out.getvalue()).decode("ascii"), "text": repr(fig)}
    try:
        chart = figure_chart(fig)
    except Exception as exc:  # a chart is a bonus: the image stays
        chart = None
        bundle["extra"] = {"nsbox/chart_error": "%s: %s" % (type(exc).__name__, exc)}
    if chart is not None:
        bundle["chart"] = chart
    return bundle, out.getvalue()


def figure_chart(fig):
    axes = fig.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if len(axes) > 1:
        title = suptitle(fig)
        return {"type": "superchart", "title": title, "elements": [axes_chart(ax) for ax in axes]}
    return axes_chart(axes[0])


def suptitle(fig):
    text = getattr(fig, "_suptitle", None)
    title = text.get_text() if text is not None else ""
    return title or None


def text_or_none(s):
    return s if s else None


def kind_of(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text

    objects = [o for o in ax.get_children() if is_data_artist(ax, o) and not isinstance(o, Text)]
    if all(isinstance(o, Line2D) for o in objects):
        return "line"
    if all(isinstance(o, (PathPatch, Line2D)) for o in objects):
        return "box_and_whisker"
    objects = [o for o in objects if not (isinstance(o, Line2D) and is_grid_line(o))]
    if all(isinstance(o, PathCollection) for o in objects):
        return "scatter"
    if all(isinstance(o, Wedge) for o in objects):
        return "pie"
    if all(isinstance(o, Rectangle) for o in objects):
        return "bar"
    return "unknown"


def is_data_artist(ax, artist):
    """The artists the code added (ax._children in matplotlib >= 3.5; the
    axes' own spines, axis, title texts and background patch are not)."""
    children = getattr(ax, "_children", None)
    if children is not None:
        return any(artist is c for c in children)
    return artist in ax.lines or artist in ax.patches or artist in ax.collections


def is_grid_line(line):
    x, y = list(line.get_xdata()), list(line.get_ydata())
    return len(x) == 2 and len(y) == 2 and (x[0] == x[1] or y[0] == y[1])


def axes_chart(ax):
    kind = kind_of(ax)
    chart = {"type": kind, "title": text_or_none(ax.get_title()), "elements": []}
    if kind == "pie":
        chart["elements"] = pie_elements(ax)
        return chart
    if kind == "unknown":
        return chart
    chart.update(labels(ax))
    if kind in ("line", "scatter"):
        chart.update(axis_info(ax, "x"))
        chart.update(axis_info(ax, "y"))
        chart["elements"] = line_elements(ax) if kind == "line" else scatter_elements(ax)
    elif kind == "bar":
        bar_chart(ax, chart)
    else:
        box_chart(ax, chart)
    return chart


def labels(ax):
    out = {}
    for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
        out[axis + "_label"] = text_or_none(label)
        m = UNIT.search(label) if label else None
        out[axis + "_unit"] = (m.group(1) or m.group(2)) if m else None
    return out


def swap_axes(chart):
    for a, b in (("x_label", "y_label"), ("x_unit", "y_unit")):
        chart[a], chart[b] = chart.get(b), chart.get(a)


def converter_of(axis):
    get = getattr(axis, "get_converter", None)
    return get() if get is not None else getattr(axis, "converter", None)


def converter_kind(axis):
    mod = type(converter_of(axis)).__module__ or ""
    if mod.startswith("matplotlib.dates"):
        return "datetime"
    if mod.startswith("matplotlib.category"):
        return "categorical"
    return None


def axis_info(ax, name):
    axis = ax.xaxis if name == "x" else ax.yaxis
    ticks = list(axis.get_ticklocs())
    tick_labels = [t.get_text() for t in axis.get_ticklabels()]
    kind = converter_kind(axis)
    if kind == "datetime":
        values = [iso_of_num(t) for t in ticks]
    else:
        values = [float(t) for t in ticks]
    scale = (ax.get_xscale() if name == "x" else ax.get_yscale())
    if kind is not None:
        scale = kind
    elif scale == "linear" and looks_categorical(values, tick_labels):
        scale = "categorical"
    return {name + "_ticks": values, name + "_tick_labels": tick_labels, name + "_scale": scale}


def looks_categorical(ticks, tick_labels):
    """Ticks 0..n-1 labelled other than with their numbers."""
    if not ticks or len(ticks) != len(tick_labels):
        return False
    return all(t == i and str(i) != lab for i, (t, lab) in enumerate(zip(ticks, tick_labels)))


def iso_of_num(num):
    from matplotlib import dates

    try:
        return dates.num2date(num).isoformat()
    except Exception:
        return None


def point_value(v):
    """A data value as JSON: dates as ISO strings, numbers as floats."""
    if hasattr(v, "isoformat"):
        return v.isoformat()
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.datetime64):
        return str(v.astype("datetime64[s]"))
    if isinstance(v, str):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def series_label(label, default):
    if not isinstance(label, str) or label.startswith("_child") or label.startswith("_collection"):
        return default
    return label


def line_elements(ax):
    out = []
    for line in ax.get_lines():
        if is_grid_line(line):
            continue
        xs, ys = line.get_xdata(), line.get_ydata()
        points = [[point_value(x), point_value(y)] for x, y in zip(xs[:POINTS_CAP], ys[:POINTS_CAP])]
        out.append({"label": series_label(line.get_label(), "Line %d" % (len(out) + 1)), "points": points})
    return out


def scatter_elements(ax):
    out = []
    for coll in ax.collections:
        offsets = coll.get_offsets()
        points = [[point_value(x), point_value(y)] for x, y in list(offsets)[:POINTS_CAP]]
        out.append({"label": series_label(coll.get_label(), "Series %d" % (len(out) + 1)), "points": points})
    return out


def rounded(x):
    """x with 8 - (its decimal exponent) significant digits, as E2B rounds
    (324 for a 90 % wedge, not 323.99999; 0.3 for a box 0.29999999999999993
    wide)."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return x
    digits = max(1, 8 - int(math.floor(math.log10(abs(x)))))
    return float("%.*g" % (digits, x))


def pie_elements(ax):
    out = []
    for wedge in ax.patches:
        out.append({
            "label": str(wedge.get_label()),
            "angle": abs(rounded(float(wedge.theta2) - float(wedge.theta1))),
            "radius": rounded(wedge.r),
        })
    return out


def tick_label_at(axis, pos, width):
    """The label of the tick nearest to a bar's centre pos, within a bar's
    width of it (grouped bars sit beside their category's tick), else the
    position as text."""
    best = None
    for loc, lab in zip(axis.get_ticklocs(), axis.get_ticklabels()):
        dist = abs(float(loc) - pos)
        if lab.get_text() and dist <= abs(width) + 1e-9 and (best is None or dist < best[0]):
            best = (dist, lab.get_text())
    if best is not None:
        return best[1]
    if converter_kind(axis) == "datetime":
        return iso_of_num(pos)
    return "%g" % pos


def bar_chart(ax, chart):
    horizontal = False
    elements = []
    for n, container in enumerate(ax.containers, 1):
        rects = [r for r in container if hasattr(r, "get_height")]
        if not rects:
            continue
        group = series_label(container.get_label(), "Group %d" % n)
        if group.startswith("_container"):
            group = "Group %d" % n
        horizontal = getattr(container, "orientation", None) == "horizontal"
        for r in rects:
            if horizontal:
                label = tick_label_at(ax.yaxis, r.get_y() + r.get_height() / 2, r.get_height())
                value = r.get_width()
            else:
                label = tick_label_at(ax.xaxis, r.get_x() + r.get_width() / 2, r.get_width())
                value = r.get_height()
            elements.append({"label": label, "group": group, "value": float(value)})
    if horizontal:
        swap_axes(chart)
    chart["elements"] = elements


def box_chart(ax, chart):
    """Boxes from the PathPatch boxes (boxplot(patch_artist=True)); whiskers,
    medians and fliers from the lines that fall on each box."""
    from matplotlib.patches import PathPatch

    names = [t.get_text() for t in ax.get_xticklabels()]
    boxes = []
    for patch in ax.patches:
        if not isinstance(patch, PathPatch):
            continue
        v = patch.get_path().vertices
        boxes.append([rounded(min(v[:, 0])), rounded(max(v[:, 0])), rounded(min(v[:, 1])), rounded(max(v[:, 1]))])
    # Vertical boxes have the same width; horizontal ones the same height.
    vertical = len(set(rounded(b[1] - b[0]) for b in boxes)) <= 1
    if not vertical:
        swap_axes(chart)
        boxes = [[b[2], b[3], b[0], b[1]] for b in boxes]
        names = [t.get_text() for t in ax.get_yticklabels()]
    stats = [{"label": names[i] if i < len(names) else "Box %d" % (i + 1), "min": b[2], "first_quartile": b[2],
              "median": None, "third_quartile": b[3], "max": b[3], "outliers": []} for i, b in enumerate(boxes)]
    for line in ax.get_lines():
        pos = [rounded(p) for p in line.get_xdata()]
        val = [rounded(p) for p in line.get_ydata()]
        if not vertical:
            pos, val = val, pos
        for b, s in zip(boxes, stats):
            if pos and all(b[0] <= p <= b[1] for p in pos):
                box_line(b, s, pos, val, line)
                break
    chart["elements"] = stats


def box_line(box, stat, pos, val, line):
    if line.get_linestyle() in ("None", "none", " ", "") and line.get_marker() not in (None, "None", "none", ""):
        stat["outliers"].extend(val)  # fliers: markers only
    elif len(pos) == 2 and val[0] == val[1] and pos[0] == box[0] and pos[1] == box[1]:
        stat["median"] = val[0]  # spans the box's width
    elif len(pos) == 2 and pos[0] == pos[1]:  # a whisker, from a quartile out
        lo, hi = min(val), max(val)
        if hi <= box[2]:
            stat["min"] = lo
        elif lo >= box[3]:
            stat["max"] = hi
