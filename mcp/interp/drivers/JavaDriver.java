// nsbox's Java driver: a persistent interpreter for execute_code
// {language: "java"} in a kept sandbox.  Started (mcp/interp/interp.c) as
//   java --add-modules jdk.jshell --add-opens java.base/java.util=ALL-UNNAMED \
//        /.nsbox/drivers/JavaDriver.java
// (a single-file source program, JDK >= 11) with fd 0 = the driver channel
// (a stream socket, read and written through FileDescriptor.in), fd 1/2 = the
// code's output.  docs/interpreters.md ("Java") is the contract.
//
// Cells are JShell snippets (jdk.jshell), split with SourceCodeAnalysis and
// run by the local execution engine: in this JVM, so System.out and
// System.err are the process's fds 1 and 2.  SIGINT stops a running cell
// (JShell.stop()); the state is kept.  No libraries: the protocol's small
// JSON is read and written below.
import java.io.ByteArrayInputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.ExpressionSnippet;
import jdk.jshell.JShell;
import jdk.jshell.JShellException;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;
import jdk.jshell.VarSnippet;

public class JavaDriver {
    static final int RESULT_CAP = 64 * 1024;
    static final int MESSAGE_CAP = 64 * 1024;
    static final String[] IMPORTS = {
        "java.io.*", "java.math.*", "java.net.*", "java.nio.file.*", "java.util.*",
        "java.util.concurrent.*", "java.util.function.*", "java.util.regex.*",
        "java.util.stream.*"};

    static JShell shell;
    static volatile boolean running;
    static volatile boolean inCell;  // a cell runs (between its snippets too)
    static volatile boolean stopped; // a SIGINT stopped the running cell
    static int count;

    public static void main(String[] args) throws Exception {
        InputStream chanIn = new FileInputStream(FileDescriptor.in);
        OutputStream chanOut = new FileOutputStream(FileDescriptor.in);
        System.setIn(new ByteArrayInputStream(new byte[0]));
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8"));
        System.setErr(new PrintStream(new FileOutputStream(FileDescriptor.err), true, "UTF-8"));
        // The sandbox's environment as System properties too, as E2B's Java
        // kernel gives it (a property already set keeps its value).
        for (Map.Entry<String, String> e : System.getenv().entrySet())
            if (System.getProperty(e.getKey()) == null)
                System.setProperty(e.getKey(), e.getValue());
        shell = JShell.builder().executionEngine("local").in(new ByteArrayInputStream(new byte[0]))
                    .out(System.out).err(System.err).build();
        for (String i : IMPORTS)
            shell.eval("import " + i + ";");
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> {
            if (inCell)
                stopped = true;
            if (running)
                shell.stop();
        });
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("op", "ready");
        ready.put("language", "java");
        ready.put("version", System.getProperty("java.version"));
        send(chanOut, ready);
        LineReader lines = new LineReader(chanIn);
        for (String line; (line = lines.next()) != null;) {
            Object msg;
            try {
                msg = new Json(line).parse();
            } catch (RuntimeException e) {
                continue;
            }
            if (!(msg instanceof Map) || !"run".equals(((Map<?, ?>) msg).get("op")))
                continue;
            // Taken: from here the cell may run (the host retries a cell on a
            // new interpreter only when this one died before saying so).
            Map<String, Object> got = new LinkedHashMap<>();
            got.put("op", "got");
            got.put("id", ((Map<?, ?>) msg).get("id"));
            send(chanOut, got);
            send(chanOut, handle((Map<?, ?>) msg));
        }
        System.exit(0);
    }

    // ---- one run ----

    static Map<String, Object> handle(Map<?, ?> msg) {
        count++;
        Map<String, Object> done = new LinkedHashMap<>();
        done.put("op", "done");
        done.put("id", msg.get("id"));
        done.put("status", "ok");
        done.put("result", null);
        done.put("error", null);
        done.put("interrupted", false);
        done.put("figures", new ArrayList<>());
        done.put("execution_count", count);
        List<Object> results = new ArrayList<>();
        done.put("results", results);
        Object env = msg.get("env");
        Object code = msg.get("code");
        String bad = env != null && !validEnv(env) ? "env must be an object of strings"
                     : !(code instanceof String)     ? "code must be a string"
                                                     : null;
        if (bad != null) {
            done.put("status", "error");
            done.put("error", error("TypeError", bad, ""));
            return done;
        }
        Map<String, String[]> saved = env == null ? null : setEnv((Map<?, ?>) env);
        stopped = false;
        inCell = true;
        try {
            runCell((String) code, done, results);
        } finally {
            inCell = false;
            running = false;
            if (saved != null)
                restoreEnv(saved);
            System.out.flush();
            System.err.flush();
        }
        return done;
    }

    static void runCell(String code, Map<String, Object> done, List<Object> results) {
        SourceCodeAnalysis sca = shell.sourceCodeAnalysis();
        String rest = code;
        String value = null;
        String text = null;
        while (!rest.isBlank()) {
            SourceCodeAnalysis.CompletionInfo ci = sca.analyzeCompletion(rest);
            String src;
            switch (ci.completeness()) {
            case COMPLETE:
            case COMPLETE_WITH_SEMI:
                src = ci.source();
                rest = ci.remaining();
                break;
            case EMPTY:
                rest = "";
                continue;
            default: // incomplete or unknown: the rest as one snippet, for its error
                src = rest;
                rest = "";
            }
            if (stopped) { // between two snippets
                interrupted(done);
                return;
            }
            running = true;
            List<SnippetEvent> events;
            try {
                events = shell.eval(src);
            } finally {
                running = false;
            }
            if (stopped) {
                interrupted(done);
                return;
            }
            value = null;
            text = null;
            for (SnippetEvent ev : events) {
                if (ev.causeSnippet() != null)
                    continue; // an update of another snippet, not this one
                Snippet sn = ev.snippet();
                if (ev.status() == Snippet.Status.REJECTED) {
                    fail(done, "CompilationError", diagnostics(sn), null);
                    return;
                }
                JShellException ex = ev.exception();
                if (ex != null) {
                    failWith(done, ex);
                    return;
                }
                if (isExpression(sn) && ev.value() != null && !isVoid(sn)) {
                    value = ev.value();
                    text = typeName(sn).equals("String") ? unquote(value) : value;
                }
            }
        }
        if (value != null) {
            done.put("result", clean(value, RESULT_CAP));
            Map<String, Object> bundle = new LinkedHashMap<>();
            bundle.put("text", clean(text, RESULT_CAP));
            bundle.put("is_main_result", true);
            results.add(bundle);
        }
    }

    static boolean isExpression(Snippet sn) {
        Snippet.SubKind k = sn.subKind();
        return k == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND ||
            k == Snippet.SubKind.VAR_VALUE_SUBKIND || k == Snippet.SubKind.ASSIGNMENT_SUBKIND ||
            k == Snippet.SubKind.OTHER_EXPRESSION_SUBKIND;
    }

    static String typeName(Snippet sn) {
        if (sn instanceof VarSnippet)
            return ((VarSnippet) sn).typeName();
        if (sn instanceof ExpressionSnippet)
            return ((ExpressionSnippet) sn).typeName();
        return "";
    }

    static boolean isVoid(Snippet sn) {
        return typeName(sn).equals("void");
    }

    // jshell shows a String value as a Java literal: the text itself.
    static String unquote(String v) {
        if (v.length() < 2 || v.charAt(0) != '"' || v.charAt(v.length() - 1) != '"')
            return v;
        StringBuilder b = new StringBuilder();
        for (int i = 1; i < v.length() - 1; i++) {
            char c = v.charAt(i);
            if (c != '\\' || i + 1 >= v.length() - 1) {
                b.append(c);
                continue;
            }
            char e = v.charAt(++i);
            switch (e) {
            case 'n': b.append('\n'); break;
            case 't': b.append('\t'); break;
            case 'r': b.append('\r'); break;
            case 'b': b.append('\b'); break;
            case 'f': b.append('\f'); break;
            case 'u':
                if (i + 4 < v.length()) {
                    b.append((char) Integer.parseInt(v.substring(i + 1, i + 5), 16));
                    i += 4;
                }
                break;
            default:
                if (e >= '0' && e <= '7') { // octal, as jshell writes control characters
                    int n = e - '0', k = 1;
                    while (k < 3 && i + 1 < v.length() - 1 && v.charAt(i + 1) >= '0' &&
                           v.charAt(i + 1) <= '7') {
                        n = n * 8 + (v.charAt(++i) - '0');
                        k++;
                    }
                    b.append((char) n);
                } else {
                    b.append(e);
                }
            }
        }
        return b.toString();
    }

    static String diagnostics(Snippet sn) {
        StringBuilder b = new StringBuilder();
        String src = sn.source();
        shell.diagnostics(sn).forEach(d -> {
            if (!d.isError())
                return;
            b.append(d.getMessage(Locale.ROOT)).append('\n');
            int p = (int) d.getStartPosition();
            if (p >= 0 && p <= src.length()) {
                int s = src.lastIndexOf('\n', Math.max(0, p - 1)) + 1;
                if (p == 0)
                    s = 0;
                int e = src.indexOf('\n', p);
                b.append(src, s, e < 0 ? src.length() : e).append('\n');
                b.append(" ".repeat(Math.max(0, p - s))).append("^\n");
            }
        });
        return b.length() > 0 ? b.toString() : "rejected: " + src.strip();
    }

    static void failWith(Map<String, Object> done, JShellException ex) {
        if (ex instanceof UnresolvedReferenceException) {
            Snippet s = ((UnresolvedReferenceException) ex).getSnippet();
            fail(done, "UnresolvedReferenceException",
                 "attempted to use " + s.source().strip() +
                     ", which cannot be run until its unresolved references are declared",
                 null);
            return;
        }
        String type = ex instanceof EvalException ? ((EvalException) ex).getExceptionClassName()
                                                  : ex.getClass().getName();
        if (stopped) {
            interrupted(done);
            return;
        }
        String msg = ex.getMessage() == null ? "" : ex.getMessage();
        StringBuilder tb = new StringBuilder(type);
        if (!msg.isEmpty())
            tb.append(": ").append(msg);
        tb.append('\n');
        for (StackTraceElement f : ex.getStackTrace()) {
            String cls = f.getClassName();
            if (cls.startsWith("jdk.internal.reflect") || cls.startsWith("java.lang.reflect") ||
                cls.startsWith("jdk.jshell."))
                break; // the execution engine's frames, below the cell's
            // A snippet's frame, as jshell shows it: "f (#3:1)", "(#4:1)".
            String file = f.getFileName() == null ? "" : f.getFileName();
            String where = file.startsWith("#")
                               ? (f.getMethodName().isEmpty() ? "" : f.getMethodName() + " ") + "(" +
                                     file + ":" + f.getLineNumber() + ")"
                               : f.toString();
            tb.append("\tat ").append(where).append('\n');
        }
        fail(done, type, msg, tb.toString());
    }

    static void interrupted(Map<String, Object> done) {
        System.err.println("Interrupted");
        done.put("interrupted", true);
        fail(done, "Interrupted", "interrupted", "");
    }

    static void fail(Map<String, Object> done, String type, String msg, String tb) {
        if (tb == null)
            tb = type + ": " + msg + (msg.endsWith("\n") ? "" : "\n");
        if (!tb.isEmpty() && !"Interrupted".equals(type))
            System.err.print(tb);
        done.put("status", "error");
        done.put("error", error(type, msg.strip(), tb));
    }

    static Map<String, Object> error(String type, String msg, String tb) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("type", type);
        e.put("message", clean(msg, MESSAGE_CAP));
        e.put("name", type);
        e.put("value", clean(msg, MESSAGE_CAP));
        e.put("traceback", clean(tb, MESSAGE_CAP));
        return e;
    }

    static String clean(String s, int cap) {
        s = s.replace("\0", "\\0");
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length <= cap)
            return new String(b, StandardCharsets.UTF_8);
        String marker = "\n... [truncated: " + b.length + " bytes in all]";
        String cut = new String(b, 0, cap - marker.length(), StandardCharsets.UTF_8);
        if (cut.endsWith("\uFFFD"))
            cut = cut.substring(0, cut.length() - 1);
        return cut + marker;
    }

    // ---- the cell's environment: System.getenv() (and what subprocesses
    // inherit) and, as E2B's Java kernel does, System properties ----

    static boolean validEnv(Object env) {
        if (!(env instanceof Map))
            return false;
        for (Map.Entry<?, ?> e : ((Map<?, ?>) env).entrySet()) {
            String k = (String) e.getKey();
            if (!(e.getValue() instanceof String) || k.isEmpty() || k.contains("=") ||
                k.contains("\0") || ((String) e.getValue()).contains("\0"))
                return false;
        }
        return true;
    }

    @SuppressWarnings("unchecked")
    static Map<String, String> writableEnv() {
        try {
            Map<String, String> env = System.getenv();
            Field f = env.getClass().getDeclaredField("m");
            f.setAccessible(true);
            return (Map<String, String>) f.get(env);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null; // not opened: properties only
        }
    }

    static Map<String, String[]> setEnv(Map<?, ?> env) {
        Map<String, String> w = writableEnv();
        Map<String, String[]> saved = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : env.entrySet()) {
            String k = (String) e.getKey(), v = (String) e.getValue();
            if (!saved.containsKey(k))
                saved.put(k, new String[] {System.getenv(k), System.getProperty(k)});
            if (w != null)
                w.put(k, v);
            System.setProperty(k, v);
        }
        return saved;
    }

    static void restoreEnv(Map<String, String[]> saved) {
        Map<String, String> w = writableEnv();
        for (Map.Entry<String, String[]> e : saved.entrySet()) {
            String k = e.getKey(), env = e.getValue()[0], prop = e.getValue()[1];
            if (w != null) {
                if (env == null)
                    w.remove(k);
                else
                    w.put(k, env);
            }
            if (prop == null)
                System.clearProperty(k);
            else
                System.setProperty(k, prop);
        }
    }

    // ---- the channel ----

    static void send(OutputStream out, Map<String, Object> msg) throws IOException {
        StringBuilder b = new StringBuilder();
        Json.write(b, msg);
        b.append('\n');
        out.write(b.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    static final class LineReader {
        final InputStream in;
        byte[] buf = new byte[1 << 16];
        int len;

        LineReader(InputStream in) {
            this.in = in;
        }

        String next() throws IOException {
            for (int scanned = 0;;) {
                for (int i = scanned; i < len; i++) {
                    if (buf[i] == '\n') {
                        String s = new String(buf, 0, i, StandardCharsets.UTF_8);
                        System.arraycopy(buf, i + 1, buf, 0, len - i - 1);
                        len -= i + 1;
                        return s;
                    }
                }
                scanned = len;
                if (len == buf.length)
                    buf = java.util.Arrays.copyOf(buf, buf.length * 2);
                int n = in.read(buf, len, buf.length - len);
                if (n < 0)
                    return null;
                len += n;
            }
        }
    }

    // ---- JSON: objects (LinkedHashMap), arrays (ArrayList), strings,
    // numbers (Long, else Double), booleans, null ----

    static final class Json {
        final String s;
        int i;

        Json(String s) {
            this.s = s;
        }

        Object parse() {
            Object v = value();
            ws();
            if (i != s.length())
                throw new IllegalArgumentException("trailing data");
            return v;
        }

        void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0)
                i++;
        }

        char peek() {
            ws();
            if (i >= s.length())
                throw new IllegalArgumentException("truncated");
            return s.charAt(i);
        }

        void expect(char c) {
            if (peek() != c)
                throw new IllegalArgumentException("expected " + c);
            i++;
        }

        Object value() {
            char c = peek();
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                if (peek() == '}') {
                    i++;
                    return m;
                }
                for (;;) {
                    if (peek() != '"')
                        throw new IllegalArgumentException("key");
                    String k = string();
                    expect(':');
                    m.put(k, value());
                    if (peek() == ',') {
                        i++;
                        continue;
                    }
                    expect('}');
                    return m;
                }
            }
            if (c == '[') {
                i++;
                List<Object> a = new ArrayList<>();
                if (peek() == ']') {
                    i++;
                    return a;
                }
                for (;;) {
                    a.add(value());
                    if (peek() == ',') {
                        i++;
                        continue;
                    }
                    expect(']');
                    return a;
                }
            }
            if (c == '"')
                return string();
            int start = i;
            while (i < s.length() && ",}] \t\r\n".indexOf(s.charAt(i)) < 0)
                i++;
            String w = s.substring(start, i);
            switch (w) {
            case "true": return Boolean.TRUE;
            case "false": return Boolean.FALSE;
            case "null": return null;
            }
            if (!w.matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?"))
                throw new IllegalArgumentException("bad value");
            try {
                return Long.parseLong(w);
            } catch (NumberFormatException e) {
                return Double.parseDouble(w);
            }
        }

        String string() {
            i++; // the quote
            StringBuilder b = new StringBuilder();
            for (;;) {
                if (i >= s.length())
                    throw new IllegalArgumentException("unterminated string");
                char c = s.charAt(i++);
                if (c == '"')
                    return b.toString();
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u':
                    b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    i += 4;
                    break;
                default: b.append(e);
                }
            }
        }

        static void write(StringBuilder b, Object v) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof String) {
                str(b, (String) v);
            } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
                b.append(v);
            } else if (v instanceof Double) {
                double d = (Double) v;
                b.append(Double.isFinite(d) ? Double.toString(d) : "null");
            } else if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first)
                        b.append(',');
                    first = false;
                    str(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (v instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object o : (List<?>) v) {
                    if (!first)
                        b.append(',');
                    first = false;
                    write(b, o);
                }
                b.append(']');
            } else {
                str(b, v.toString());
            }
        }

        // Lone surrogates become U+FFFD: the host's parser takes UTF-8 only.
        static void str(StringBuilder b, String s) {
            b.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (Character.isHighSurrogate(c) && i + 1 < s.length() &&
                    Character.isLowSurrogate(s.charAt(i + 1))) {
                    b.append(c).append(s.charAt(++i));
                    continue;
                }
                if (Character.isSurrogate(c)) {
                    b.append('\uFFFD');
                    continue;
                }
                switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20 || c == 0x7f)
                        b.append(String.format("\\u%04x", (int) c));
                    else
                        b.append(c);
                }
            }
            b.append('"');
        }
    }
}
