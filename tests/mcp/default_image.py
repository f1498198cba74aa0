"""execute_code and list_languages against a store holding only the default
image (tests/integration/default_image.sh pulls it): every language it
serves runs through the languages table's argv.  Environment: NSBOX,
NSBOX_STORE, SUITE."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

s = Server(store=os.environ["NSBOX_STORE"])

r = s.tool("list_languages")
got = {l["language"] for l in r["structuredContent"]["languages"]}
want = {"python", "javascript", "typescript", "sh", "bash"}
result("mcp_list_languages", want <= got, f"missing {want - got} from {got}")

TS = ('type Shape = { w: number; h: number };\n'
      'const area = (s: Shape): number => s.w * s.h;\n'
      'console.log(`area=${area({ w: 6, h: 7 })}`);\n')
CASES = [
    ("typescript", TS, "area=42\n"),
    ("ts", TS, "area=42\n"),
    ("javascript", "console.log([1, 2, 3].map(x => x * 2).join(','))", "2,4,6\n"),
    ("python", "import pandas as pd; print(pd.Series([1, 2, 3]).sum())", "6\n"),
    ("bash", 'a=(x y z); echo "${#a[@]}"', "3\n"),
    ("sh", "echo sh", "sh\n"),
]
for lang, code, want in CASES:
    r = s.tool("execute_code", language=lang, code=code)
    rec = r.get("structuredContent", {})
    ok = rec.get("status") == "ok" and rec.get("stdout") == want
    result(f"mcp_execute_code_{lang}", ok, f"{rec.get('status')} {rec.get('stdout')!r} {rec.get('stderr')!r} {r}")
    if lang == "typescript":
        print(f"# execute_code typescript: wall_ms {rec.get('wall_ms')}", flush=True)

# The languages table's default image wins over another image with the same
# label (the shell script pulls the python fixture too): sandbox_create
# names the reference it used; a label match gives another name or a digest.
for lang in ("python", "typescript", "sh"):
    r = s.tool("sandbox_create", language=lang)
    st = r.get("structuredContent", {})
    result(f"mcp_default_image_preferred_{lang}", st.get("image") == "localhost/nsbox-default:latest", r)
    if st.get("sandbox_id"):
        s.tool("sandbox_stop", sandbox_id=st["sandbox_id"])

# A TypeScript syntax error is the code's failure (status error), not nsbox's.
r = s.tool("execute_code", language="typescript", code="const x: = 1;")
rec = r.get("structuredContent", {})
result("mcp_typescript_syntax_error", rec.get("status") == "error" and "error TS" in rec.get("stderr", ""), r)
s.close()
finish()
