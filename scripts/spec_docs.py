"""Extracts, from the WebNN spec's Bikeshed source, what the docstrings of the
MLGraphBuilder operator methods quote: each operator's section anchor, its
one-line meaning, what it returns (the output shape rule), the meaning of
each argument and option.  Writes webnn/_opdocs.py (committed, so the package
never needs the spec at run time):

    python scripts/spec_docs.py [path/to/webnn-index.bs]

The operator list comes from the operator table (webnn._core.op_table())."""
import os
import pprint
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_SPEC = os.path.join(ROOT, "..", "shared", "spec", "webnn-index.bs")
OUT = os.path.join(ROOT, "webnn", "_opdocs.py")


def clean(text):
    """Bikeshed markup to plain text."""
    t = re.sub(r"\{\{\s*([A-Za-z0-9_]+/)?\"?([^}|\"]+?)\"?(\|[^}]*)?\s*\}\}",
               lambda m: (m.group(3)[1:] if m.group(3) else m.group(2)).split("(")[0]
               if m.group(3) else m.group(2), text)
    t = re.sub(r"\[=\s*(?:[^=|\]]*/)?([^=|\]]+?)(?:\|([^=\]]+))?\s*=\]",
               lambda m: m.group(2) or m.group(1), t)
    t = re.sub(r"\[\[!?([^\]]+)\]\]", r"[\1]", t)
    t = re.sub(r"<a [^>]*>(.*?)</a>", r"\1", t)
    t = re.sub(r"</?(dfn|code|var|em|strong|span|b|i)[^>]*>", "", t)
    t = re.sub(r"<[^>]+>", "", t)
    t = re.sub(r"\b\w+\([^()]*\)/(\w+)", r"\1", t)   # "where(c, t, f, options)/trueValue"
    # *emphasis*, which may hold a product: *[numDirections, 4 * hiddenSize]*
    t = re.sub(r"(?<![\w*])\*(?=\S)((?:[^*]| \* )+?)(?<=\S)\*(?![\w*])", r"\1", t)
    t = re.sub(r"\s+", " ", t).strip()
    return t.lstrip(":- ").strip()


def sections(lines):
    """(anchor, title, body lines) of every ### section."""
    out = []
    cur = None
    for ln in lines:
        m = re.match(r"^#{3,4} (.*?) #{3,4} \{#([^}]+)\}", ln)
        if m:
            cur = [m.group(2), m.group(1), []]
            out.append(cur)
        elif cur is not None:
            cur[2].append(ln)
    return out


def first_sentence(body):
    for ln in body:
        s = ln.strip()
        if s and not s.startswith("<") and not s.startswith("Note"):
            return clean(s)
    return ""


def block_items(body, start_pat):
    """'- <dfn>name</dfn>: text' items after a line matching start_pat."""
    out = {}
    it = iter(range(len(body)))
    i = 0
    while i < len(body):
        if re.search(start_pat, body[i]):
            i += 1
            cur = None
            while i < len(body) and not body[i].strip().startswith("**Returns"):
                s = body[i].strip()
                m = re.match(r"- <dfn>(\w+)</dfn>:\s*(.*)", s)
                if m:
                    cur = m.group(1)
                    out[cur] = m.group(2)
                elif s.startswith("</div>"):
                    break
                elif cur and s:
                    out[cur] += " " + s
                i += 1
            break
        i += 1
    return {k: clean(v) for k, v in out.items()}


def returns(body):
    for i, ln in enumerate(body):
        if "**Returns:**" in ln:
            text = [ln.split("**Returns:**", 1)[1]]
            for nxt in body[i + 1:]:
                if nxt.strip().startswith("</div>") or nxt.strip().startswith("<"):
                    break
                text.append(nxt)
            return clean(" ".join(text))
    return ""


def members(body):
    """Dictionary members: ': <dfn>name</dfn>' then '::' then text."""
    out = {}
    cur = None
    for ln in body:
        s = ln.strip()
        m = re.match(r": <dfn>(\w+)</dfn>", s)
        if m:
            # the options dictionary comes first; a SupportLimits dictionary's
            # member of the same name ("bias": MLTensorLimits) is not kept
            cur = m.group(1) if m.group(1) not in out else None
            if cur:
                out[cur] = ""
            continue
        if s.startswith("</dl>"):
            cur = None
        elif cur is not None and s and s != "::":
            out[cur] += " " + s
    return {k: clean(v) for k, v in out.items()
            if not re.match(r"\s*(::)?\s*(MLTensorLimits|Support limits)", v)}


def op_types(body):
    out = {}
    for ln in body:
        m = re.match(r"\s*- \*(\w+)\*: (.*)", ln)
        if m:
            out[m.group(1)] = clean(m.group(2))
    return out


def extract(spec_path, ops):
    lines = open(spec_path, encoding="utf-8").read().splitlines()
    secs = [s for s in sections(lines) if s[0].startswith("api-mlgraphbuilder-")]
    docs = {}
    for camel in ops:
        sec = None
        for anchor, title, body in secs:
            text = "\n".join(body)
            if re.search(r"MLOperand(?:\s*>)?\s+%s\(" % re.escape(camel), text) or \
               re.search(r"sequence<MLOperand>\s+%s\(" % re.escape(camel), text):
                sec = (anchor, title, body)
                break
        if sec is None:
            continue
        anchor, title, body = sec
        kinds = op_types(body)
        summary = first_sentence(body)
        key = camel[6:] if camel.startswith("reduce") else camel
        if key in kinds:
            summary = kinds[key]
        args = block_items(body, r"dfn-for=\"[^\"]*MLGraphBuilder/%s\(" % re.escape(camel))
        if not args:
            args = block_items(body, r"\*\*Arguments:\*\*")
        docs[camel] = {
            "anchor": anchor,
            "url": "https://www.w3.org/TR/webnn/#" + anchor,
            "summary": summary,
            "returns": returns(body),
            "arguments": {k: v for k, v in args.items() if k != "options"},
            "options": members(body),
        }
    return docs


def main():
    spec = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SPEC
    sys.path.insert(0, ROOT)
    from webnn import _core
    ops = [row["camel"] for row in _core.op_table()]
    docs = extract(spec, ops)
    missing = sorted(set(ops) - set(docs))
    with open(OUT, "w", encoding="utf-8") as f:
        f.write('"""Generated by scripts/spec_docs.py from the WebNN spec (Bikeshed\n'
                'source): per operator, its section, one-line meaning, return rule and\n'
                'argument/option meanings.  Do not edit."""\n')
        f.write("OPDOCS = ")
        f.write(pprint.pformat(docs, width=100, sort_dicts=True))
        f.write("\n")
    print(f"wrote {OUT}: {len(docs)} operators" + (f"; missing {missing}" if missing else ""))


if __name__ == "__main__":
    main()
