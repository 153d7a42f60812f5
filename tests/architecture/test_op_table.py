"""The operator table's family and traits columns (csrc/ops/ops.def, read
through webnn._core.op_table()) and its lower column (read from the rows'
text): the classes the compiler asks about instead of switching on
operator ids.  The expected sets are the lists the compiler's switch
functions held before the table had these columns (fuse.c's
wnn_fusion_is_activation / _is_eltwise, layout.c's elementwise / is_pool /
is_reduce, compile.c's cheap_op, lower/broadcast.c's wnn_lower_is_broadcast,
lower/gather.c's wnn_lower_is_gather, plan.c's reshape / identity
aliasing): moving them into the rows changed no class."""
import pathlib
import re

from webnn import _core

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROWS = {row["camel"]: row for row in _core.op_table()}

ACTIVATIONS = {"relu", "clamp", "sigmoid", "tanh", "elu", "gelu", "hardSigmoid", "hardSwish",
               "leakyRelu", "linear", "softplus", "softsign"}
ELTWISE = ACTIVATIONS | {"add", "sub", "mul", "div", "max", "min", "pow", "prelu", "abs",
                         "ceil", "cos", "erf", "exp", "floor", "log", "neg", "reciprocal",
                         "roundEven", "sin", "sign", "sqrt", "tan"}
LOGICAL = {"identity", "cast", "isNaN", "isInfinite", "logicalNot", "equal", "notEqual",
           "greater", "greaterOrEqual", "lesser", "lesserOrEqual", "logicalAnd", "logicalOr",
           "logicalXor"}
ANY_LAYOUT = ELTWISE | LOGICAL
CHEAP = ANY_LAYOUT | {"softmax", "layerNormalization", "instanceNormalization",
                      "batchNormalization", "reshape", "where", "expand"}
FAMILIES = {
    "POOL": {"averagePool2d", "l2Pool2d", "maxPool2d"},
    "REDUCE": {"reduceL1", "reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMax",
               "reduceMean", "reduceMin", "reduceProduct", "reduceSum", "reduceSumSquare"},
    "BROADCAST": {"add", "sub", "mul", "div", "max", "min", "pow", "equal", "notEqual",
                  "greater", "greaterOrEqual", "lesser", "lesserOrEqual", "logicalAnd",
                  "logicalOr", "logicalXor", "prelu", "where"},
    "GATHER": {"gather", "gatherElements", "gatherND", "scatterElements", "scatterND"},
    "CONV": {"conv2d", "convTranspose2d"},
    "AXIS": {"argMin", "argMax", "cumulativeSum", "softmax", "batchNormalization"},
    "NORM": {"instanceNormalization", "layerNormalization"},
    "QUANT": {"quantizeLinear", "dequantizeLinear"},
    "VIEWS": {"transpose", "expand", "slice", "tile", "reverse", "split", "concat"},
    "MATMUL": {"matmul"},
    "GEMM": {"gemm"},
    "PAD": {"pad"},
    "TRIANGULAR": {"triangular"},
    "RESAMPLE": {"resample2d"},
    "RECURRENT": {"gru", "gruCell", "lstm", "lstmCell"},
}


def _with(trait):
    return {name for name, row in ROWS.items() if trait in row["traits"]}


def _family(family):
    return {name for name, row in ROWS.items() if row["family"] == family}


def test_every_row_has_a_family_and_known_traits():
    known = {"ELTWISE", "ACTIVATION", "ANY_LAYOUT", "CHEAP", "PRODUCER", "ALIAS"}
    assert len(ROWS) == 95
    for name, row in ROWS.items():
        assert isinstance(row["family"], str) and row["family"].isupper(), name
        assert set(row["traits"]) <= known, (name, row["traits"])


def test_traits_are_the_compilers_former_classes():
    assert _with("ACTIVATION") == ACTIVATIONS
    assert _with("ELTWISE") == ELTWISE
    assert _with("ANY_LAYOUT") == ANY_LAYOUT
    assert _with("CHEAP") == CHEAP
    assert _with("PRODUCER") == {"conv2d", "convTranspose2d", "matmul", "gemm"}
    assert _with("ALIAS") == {"reshape", "identity"}
    # the classes nest as the switch functions fell through to each other
    assert _with("ACTIVATION") < _with("ELTWISE") < _with("ANY_LAYOUT") < _with("CHEAP")


def test_families_are_the_compilers_former_classes():
    for family, names in FAMILIES.items():
        assert _family(family) == names, family
    # families partition the table
    assert sum(len(_family(f)) for f in {r["family"] for r in ROWS.values()}) == len(ROWS)


_ROW = re.compile(r"^WNN_OP\(([A-Z0-9_]+), \"(\w+)\",.*, ([A-Z]+), ([A-Za-z_0-9| ]+), "
                  r"(\w+), (cpu_\w+)\)$", re.M)


def _lower_column():
    text = "".join(p.read_text() for p in [ROOT / "csrc/ops/ops.def",
                                            *sorted((ROOT / "csrc/ops/defs").glob("*.def"))])
    return {m.group(2): (m.group(3), m.group(5)) for m in _ROW.finditer(text)}


def test_the_lower_column_follows_the_family():
    # one lowering per family (the views and the recurrent networks, whose
    # options differ: one per operator); the families the backends read as
    # they are have none
    rows = _lower_column()
    assert set(rows) == set(ROWS)
    for name, (family, lower) in rows.items():
        assert ROWS[name]["family"] == family, name
        if family in ("VIEWS", "RECURRENT"):
            snake = ROWS[name]["snake"]
            assert lower == f"wnn_lower_op_{snake}", name
        elif family in FAMILIES:
            assert lower == f"wnn_lower_op_{family.lower()}", name
        else:
            assert lower == "0", name
    # every lowering named in the table is defined in compiler/lower/
    defined = set(re.findall(r"^WNN_LOWER_FN\((wnn_lower_op_\w+)\)\n\{", "".join(
        p.read_text() for p in (ROOT / "csrc/compiler/lower").glob("*.c")), re.M))
    assert {lower for _, lower in rows.values()} - {"0"} == defined


def _lower_h():
    return (ROOT / "csrc/compiler/lower/lower.h").read_text()


def test_lower_h_declares_no_lowering_by_hand():
    # a family's lowering is its row's lower column and its
    # compiler/lower/<family>.c, nothing else: lower.h declares the
    # lowerings from ops.def's lower column (an X-macro), none by name
    text = re.sub(r"/\*.*?\*/", "", _lower_h(), flags=re.S)
    assert not re.findall(r"\bWNN_LOWER_FN\(\s*wnn_lower_op_\w+\s*\)", text)
    assert re.search(r"#define WNN_OP\([^)]*\blower\b[^)]*\)[^\n]*\\\n\s*WNN_LOWER_DECL\("
                     r"WNN_LOWER_IS0\(lower\), lower\)\n#include \"../../ops/ops.def\"", text)


def test_every_lowering_is_declared_through_the_generated_list():
    # preprocess lower.c (lower.h included): the lowerings declared are
    # exactly the lower column's names, and a 0 declares nothing
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler builds this project"
    out = subprocess.run([cc, "-E", "-P", "-I", str(ROOT / "csrc/include"),
                          str(ROOT / "csrc/compiler/lower/lower.c")],
                         check=True, capture_output=True, text=True).stdout
    declared = set(re.findall(r"wnn_status\s+(wnn_lower_op_\w+)\s*\(\s*wnn_lowered\s*\*\s*l\b",
                              out))
    column = {lower for _, lower in _lower_column().values()} - {"0"}
    assert declared == column
    assert "wnn_lower_op_triangular" in declared and "wnn_lower_op_lstm_cell" in declared
    # and the lowerings' table in lower.c is the same column, by operator id
    assert "WNN_LOWER_FN(0)" not in out
