"""The ported E2B chart cases (js/tests/charts, python/tests/charts): a
matplotlib figure's results[0].chart, as the spec's CHART (mirroring E2B's
chart JSON).  The JS and Python versions of a chart share its code and most
checks; where they check different things, js says which.  E2B's Python
isinstance(x, float) on a JSON number is "a number" here (JSON has one
number type), its tuples are pairs."""
import datetime
import json

from lab import case, eq, is_number, ok

JS, PY = "js/tests/charts/", "python/tests/charts/"


def chart_of(lab, code):
    ex = lab.sandbox().run(code)
    c = ex.result(0).get("chart")
    ok(isinstance(c, dict), lambda: f"results[0].chart is {str(c)[:100]} "
       f"(results[0] keys {sorted(ex.result(0))})")
    return c


def field(c, k):
    ok(k in c, lambda: f"chart has no {k} (keys {sorted(c)})")
    return c[k]


def all_are(what, values, pred, kind):
    ok(isinstance(values, list) and all(pred(v) for v in values),
       lambda: f"{what} are not all {kind}: {str(values)[:200]}")


def numbers(what, v):
    all_are(what, v, is_number, "numbers")


def strings(what, v):
    all_are(what, v, lambda x: isinstance(x, str), "strings")


def labels_units(c, xl, yl, xu, yu):
    eq("x_label", field(c, "x_label"), xl)
    eq("y_label", field(c, "y_label"), yl)
    eq("x_unit", field(c, "x_unit"), xu)
    eq("y_unit", field(c, "y_unit"), yu)


def points(what, el, n, pred=None):
    p = field(el, "points")
    eq(f"{what}: the number of points", len(p), n)
    all_are(f"{what}'s points", p, lambda q: isinstance(q, list) and len(q) == 2, "pairs")
    if pred:
        all_are(f"{what}'s points", p, pred, "of the expected types")
    return p


def iso(v):
    """An ISO date-time string as an aware datetime (naive: UTC), or None."""
    try:
        d = datetime.datetime.fromisoformat(v)
    except (TypeError, ValueError):
        return None
    return d if d.tzinfo else d.replace(tzinfo=datetime.timezone.utc)


BAR = """
import matplotlib.pyplot as plt

# Prepare data
authors = ['Author A', 'Author B', 'Author C', 'Author D']
sales = [100, 200, 300, 400]

# Create and customize the bar chart
plt.figure(figsize=(10, 6))
plt.bar(authors, sales, label='Books Sold', color='blue')
plt.xlabel('Authors')
plt.ylabel('Number of Books Sold')
plt.title('Book Sales by Authors')

# Display the chart
plt.tight_layout()
plt.show()
"""


@case(JS + "bar.test.ts", PY + "test_bar.py")
def bar(lab):
    c = chart_of(lab, BAR)
    eq("type", field(c, "type"), "bar")
    eq("title", field(c, "title"), "Book Sales by Authors")
    labels_units(c, "Authors", "Number of Books Sold", None, None)
    bars = field(c, "elements")
    eq("the number of bars", len(bars), 4)
    eq("values", [b.get("value") for b in bars], [100, 200, 300, 400])
    eq("groups", [b.get("group") for b in bars], ["Books Sold"] * 4)
    eq("labels", [b.get("label") for b in bars], ["Author A", "Author B", "Author C", "Author D"])


BOX = """
import matplotlib.pyplot as plt
import numpy as np

# Sample data
data = {
    'Class A': [85, 90, 78, 92, 88],
    'Class B': [95, 89, 76, 91, 84, 87],
    'Class C': [75, 82, 88, 79, 86]
}

# Create figure and axis
fig, ax = plt.subplots(figsize=(10, 6))

# Customize plot
ax.set_title('Exam Scores Distribution')
ax.set_xlabel('Class')
ax.set_ylabel('Score')

# Set custom colors
ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)

# Add legend
ax.legend()

# Adjust layout and show plot
plt.tight_layout()
plt.show()
"""


@case(JS + "boxAndWhisker.test.ts", PY + "test_box_and_whiskers.py")
def box_and_whisker(lab):
    c = chart_of(lab, BOX)
    eq("type", field(c, "type"), "box_and_whisker")
    eq("title", field(c, "title"), "Exam Scores Distribution")
    labels_units(c, "Class", "Score", None, None)
    boxes = field(c, "elements")
    eq("the number of boxes", len(boxes), 3)
    for k, want in (("label", ["Class A", "Class B", "Class C"]), ("outliers", [[], [76], []]),
                    ("min", [78, 84, 75]), ("first_quartile", [85, 84.75, 79]),
                    ("median", [88, 88, 82]), ("third_quartile", [90, 90.5, 86]),
                    ("max", [92, 95, 88])):
        eq(k, [b.get(k) for b in boxes], want)


LINE = """
import numpy as np
import matplotlib.pyplot as plt
import datetime

# Generate x values
dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]

x = np.linspace(0, 2*np.pi, 100)
# Calculate y values
y_sin = np.sin(x)
y_cos = np.cos(x)

# Create the plot
plt.figure(figsize=(10, 6))
plt.plot(dates, y_sin, label='sin(x)')
plt.plot(dates, y_cos, label='cos(x)')

# Add labels and title
plt.xlabel("Time (s)")
plt.ylabel("Amplitude (Hz)")
plt.title('Plot of sin(x) and cos(x)')

# Display the plot
plt.show()
"""


def line(lab, js):
    c = chart_of(lab, LINE)
    eq("type", field(c, "type"), "line")
    eq("title", field(c, "title"), "Plot of sin(x) and cos(x)")
    labels_units(c, "Time (s)", "Amplitude (Hz)", "s", "Hz")
    eq("x_scale", field(c, "x_scale"), "datetime")
    eq("y_scale", field(c, "y_scale"), "linear")
    strings("x_ticks", field(c, "x_ticks"))
    numbers("y_ticks", field(c, "y_ticks"))
    strings("y_tick_labels", field(c, "y_tick_labels"))
    if js:
        strings("x_tick_labels", field(c, "x_tick_labels"))
    else:
        ok(c["x_ticks"] and iso(c["x_ticks"][0]), lambda: f"x_ticks[0] {c['x_ticks'][:1]} is no ISO date")
    lines = field(c, "elements")
    eq("the number of lines", len(lines), 2)
    date_y = lambda p: isinstance(p[0], str) and is_number(p[1])  # noqa: E731
    eq("first label", lines[0].get("label"), "sin(x)")
    first = points("sin(x)", lines[0], 100, date_y)
    if js:
        eq("the first point's date", iso(first[0][0]),
           datetime.datetime(2023, 9, 1, tzinfo=datetime.timezone.utc))
    else:
        ok(iso(first[0][0]), lambda: f"the first point's x {first[0][0]!r} is no ISO date")
    eq("second label", lines[1].get("label"), "cos(x)")
    points("cos(x)", lines[1], 100, date_y if js else None)


case(JS + "line.test.ts")(lambda lab: line(lab, True))
case(PY + "test_line.py")(lambda lab: line(lab, False))

LOG = """
import numpy as np
import matplotlib.pyplot as plt

# Generate x values
x = np.linspace(0, 100, 100)
# Calculate y values
y = np.exp(x)

# Create the plot
plt.figure(figsize=(10, 6))
plt.plot(x, y, label='y = e^x')

# Set log scale for the y-axis
plt.yscale('log')

# Add labels and title
plt.xlabel('X-axis')
plt.ylabel('Y-axis (log scale)')
plt.title('Chart with Log Scale on Y-axis')

plt.legend()
plt.grid(True)
plt.show()
"""


@case(JS + "log.test.ts", PY + "test_log_chart.py")
def log(lab):
    c = chart_of(lab, LOG)
    eq("type", field(c, "type"), "line")
    eq("title", field(c, "title"), "Chart with Log Scale on Y-axis")
    labels_units(c, "X-axis", "Y-axis (log scale)", None, "log scale")
    eq("x_scale", field(c, "x_scale"), "linear")
    eq("y_scale", field(c, "y_scale"), "log")
    numbers("x_ticks", field(c, "x_ticks"))
    numbers("y_ticks", field(c, "y_ticks"))
    strings("x_tick_labels", field(c, "x_tick_labels"))
    strings("y_tick_labels", field(c, "y_tick_labels"))
    lines = field(c, "elements")
    eq("the number of lines", len(lines), 1)
    eq("label", lines[0].get("label"), "y = e^x")
    points("y = e^x", lines[0], 100, lambda p: is_number(p[0]) and is_number(p[1]))


PIE = """
import matplotlib.pyplot as plt
import numpy as np

# Step 1: Define the data for the pie chart
categories = ["No", "No, in blue"]
sizes = [90, 10] 

# Step 2: Create the figure and axis objects
fig, ax = plt.subplots(figsize=(8, 8))

plt.xlabel("x")
plt.ylabel("y")

# Step 3: Create the pie chart
ax.pie(sizes, labels=categories, autopct='%1.1f%%', startangle=90, colors=plt.cm.Pastel1.colors[:len(categories)])

# Step 4: Add title and legend
ax.axis('equal')  # Equal aspect ratio ensures that pie is drawn as a circle
plt.title('Will I wake up early tomorrow?')

# Step 5: Show the plot
plt.show()
"""  # noqa: W291,E501 -- E2B's code as it is


@case(JS + "pie.test.ts", PY + "test_pie.py")
def pie(lab):
    c = chart_of(lab, PIE)
    eq("type", field(c, "type"), "pie")
    eq("title", field(c, "title"), "Will I wake up early tomorrow?")
    wedges = field(c, "elements")
    eq("the number of wedges", len(wedges), 2)
    eq("wedges", [(w.get("label"), w.get("angle"), w.get("radius")) for w in wedges],
       [("No", 324, 1), ("No, in blue", 36, 1)])


DATETIME = """
    import numpy as np
    import matplotlib.pyplot as plt
    import datetime

    # Generate x values
    dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
    y_sin = np.sin(np.linspace(0, 2*np.pi, 100))

    # Create the plot
    plt.figure(figsize=(10, 6))
    plt.plot(dates, y_sin, label='sin(x)')
    plt.show()
    """
CATEGORICAL = """
    import numpy as np
    import matplotlib.pyplot as plt

    x = [1, 2, 3, 4, 5]
    y = ['A', 'B', 'C', 'D', 'E']

    # Create the plot
    plt.figure(figsize=(10, 6))
    plt.plot(x, y)
    plt.show()
    """


@case(JS + "scales.test.ts::datetime scale", PY + "test_scale.py::test_datetime_scale")
def datetime_scale(lab):
    c = chart_of(lab, DATETIME)
    eq("type", field(c, "type"), "line")
    eq("x_scale", field(c, "x_scale"), "datetime")
    eq("y_scale", field(c, "y_scale"), "linear")


@case(JS + "scales.test.ts::categorical scale", PY + "test_scale.py::test_categorical_scale")
def categorical_scale(lab):
    c = chart_of(lab, CATEGORICAL)
    eq("type", field(c, "type"), "line")
    eq("x_scale", field(c, "x_scale"), "linear")
    eq("y_scale", field(c, "y_scale"), "categorical")


SCATTER = """
import matplotlib.pyplot as plt
import numpy as np

# Create data
N = 5
x1 = np.random.rand(N)
y1 = np.random.rand(N)
x2 = np.random.rand(2*N)
y2 = np.random.rand(2*N)

plt.xlabel("A")
plt.ylabel("B")

plt.scatter(x1, y1, c='blue', label='Dataset 1')
plt.scatter(x2, y2, c='red', label='Dataset 2')

plt.show()
"""


def scatter(lab, js):
    c = chart_of(lab, SCATTER)
    eq("type", field(c, "type"), "scatter")
    eq("title", field(c, "title"), None)
    eq("x_label", field(c, "x_label"), "A")
    eq("y_label", field(c, "y_label"), "B")
    if not js:
        eq("x_scale", field(c, "x_scale"), "linear")
        eq("y_scale", field(c, "y_scale"), "linear")
    numbers("x_ticks", field(c, "x_ticks"))
    numbers("y_ticks", field(c, "y_ticks"))
    if js:
        strings("x_tick_labels", field(c, "x_tick_labels"))
    strings("y_tick_labels", field(c, "y_tick_labels"))
    sets = field(c, "elements")
    eq("the number of data sets", len(sets), 2)
    xy = (lambda p: is_number(p[0]) and is_number(p[1])) if js else None
    eq("first label", sets[0].get("label"), "Dataset 1")
    points("Dataset 1", sets[0], 5, xy)
    eq("second label", sets[1].get("label"), "Dataset 2")
    points("Dataset 2", sets[1], 10, xy)


case(JS + "scatter.test.ts")(lambda lab: scatter(lab, True))
case(PY + "test_scatter.py")(lambda lab: scatter(lab, False))

SCATTER_ONE = """
import matplotlib.pyplot as plt
import numpy as np

# Create data
N = 5
x = np.random.rand(N)
y = np.random.rand(N)

plt.xlabel("A")

plt.scatter(x, y, c='blue', label='Dataset')

plt.show()
"""


# E2B's Execution.to_json(): the record serialized, read back.
@case(PY + "test_json.py")
def chart_json(lab):
    ex = lab.sandbox().run(SCATTER_ONE)
    ex.result(0)
    back = json.loads(json.dumps(ex.sc))
    c = back["results"][0].get("chart") or {}
    eq("results[0].chart.type", c.get("type"), "scatter")


SUPER = """
import matplotlib.pyplot as plt
import numpy as np

# Data for plotting
x1 = np.linspace(0, 10, 100)
y1 = np.sin(x1)

# Create a figure with multiple subplots
fig, axs = plt.subplots(1, 2, figsize=(10, 8))
fig.suptitle('Multiple Charts Example', fontsize=16)

# Plotting on the different axes
axs[0].plot(x1, y1, 'r')
axs[0].set_title('Sine Wave')
axs[0].grid(True)

N = 5
x2 = np.random.rand(N)
y2 = np.random.rand(N)

axs[1].scatter(x2, y2, c='blue', label='Dataset 1')
axs[1].set_xlabel('X')
axs[1].set_ylabel('Y')
axs[1].set_title('Scatter Plot')
axs[1].grid(True)

plt.show()
"""


@case(JS + "superchart.test.ts", PY + "test_superchart.py")
def superchart(lab):
    c = chart_of(lab, SUPER)
    eq("type", field(c, "type"), "superchart")
    eq("title", field(c, "title"), "Multiple Charts Example")
    charts = field(c, "elements")
    eq("the number of charts", len(charts), 2)
    first, second = charts
    for ch, title, kind, xl, yl, n in ((first, "Sine Wave", "line", None, None, 100),
                                       (second, "Scatter Plot", "scatter", "X", "Y", 5)):
        eq(f"{title}: title", ch.get("title"), title)
        eq(f"{title}: type", ch.get("type"), kind)
        eq(f"{title}: x_label", ch.get("x_label"), xl)
        eq(f"{title}: y_label", ch.get("y_label"), yl)
        els = field(ch, "elements")
        eq(f"{title}: the number of elements", len(els), 1)
        eq(f"{title}: the number of points", len(els[0].get("points") or []), n)


UNKNOWN = """
import matplotlib.pyplot as plt
import numpy as np

# Create a figure and an axis
fig, ax = plt.subplots()

# Create data for two concentric circles
circle1 = plt.Circle((0, 0), 1, color='blue', fill=False, linewidth=2)
circle2 = plt.Circle((0, 0), 2, color='red', fill=False, linewidth=2)

# Add the circles to the axes
ax.add_artist(circle1)
ax.add_artist(circle2)

# Set grid
ax.grid(True)

# Set title
plt.title('Two Concentric Circles')

# Show the plot
plt.show()
"""


@case(JS + "unknown.test.ts", PY + "test_unknown.py")
def unknown(lab):
    c = chart_of(lab, UNKNOWN)
    eq("type", field(c, "type"), "unknown")
    eq("title", field(c, "title"), "Two Concentric Circles")
    eq("the number of elements", len(field(c, "elements")), 0)
