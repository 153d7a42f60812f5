"""Print the README's table of operators and data types, from what each
backend's op_support_limits() reports (so the README cannot drift from the
code).  Usage: python scripts/op_table.py [cpu|gpu]"""
import sys

import webnn

SHORT = {"float32": "f32", "float16": "f16", "int32": "i32", "uint32": "u32",
         "int64": "i64", "uint64": "u64", "int8": "i8", "uint8": "u8"}


def types(lim):
    dts = lim["data_types"]
    return "all" if len(dts) == 8 else " ".join(SHORT[d] for d in dts)


def main(device="cpu"):
    ctx = webnn.ml.create_context(device_type=device)
    limits = ctx.op_support_limits()
    rows = {op["camel"]: op for op in webnn._core.op_table()}
    print(f"| operator | python | inputs: data types | output |")
    print("|---|---|---|---|")
    for camel in webnn.OPERATORS:
        snake = rows[camel]["snake"]
        lim = limits.get(snake)
        if lim is None:
            continue
        ins = [f"{n}: {types(v)}" for n, v in lim.items() if not n.startswith("output")]
        outs = [types(v) for n, v in lim.items() if n.startswith("output")]
        print(f"| {camel} | {snake} | {'; '.join(ins)} | {', '.join(dict.fromkeys(outs))} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
