"""reshape: same elements in row-major order, new shape (rank 0 included),
every data type, values copied bit-exactly."""
import numpy as np
import pytest

from .conftest import (check_shape_dtype, npdt, op_dtypes, op_max_rank, random_shape,
                       random_values, rng_for)

DTYPES = op_dtypes("reshape", "input")
MAX_RANK = min(op_max_rank("reshape", "input"), 8)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def random_factorization(rng, n, rank):
    """A shape of the given rank whose product is n (rank 0 only for n == 1)."""
    if rank == 0:
        return ()
    dims = [1] * rank
    m = n
    p = 2
    factors = []
    while m > 1:
        while m % p == 0:
            factors.append(p)
            m //= p
        p += 1
    for f in factors:
        dims[int(rng.integers(0, rank))] *= f
    return tuple(dims)


def _reshape(shape):
    return lambda bld, x: bld.reshape(x, list(shape))


def check(x, new_shape, got, dt):
    check_shape_dtype(got, dt, new_shape)
    np.testing.assert_array_equal(bits(got).reshape(-1), bits(x).reshape(-1),
                                  err_msg=f"reshape {dt} {x.shape} -> {new_shape}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_random(run, dt, rank):
    rng = rng_for("reshape", dt, rank)
    x = random_values(rng, random_shape(rng, rank, max_dim=5), dt)
    n = x.size
    targets = [(n,), random_factorization(rng, n, 2), random_factorization(rng, n, 3),
               random_factorization(rng, n, 5), random_factorization(rng, n, MAX_RANK),
               (1,) * 3 + (n,)]
    if n == 1:
        targets.append(())
    for new_shape in targets:
        check(x, new_shape, run(_reshape(new_shape), {"x": x}), dt)
        check(x, new_shape, run(_reshape(new_shape), {}, constants={"x": x}), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_bit_exact_and_chained(run, dt):
    """Raw bytes (NaN payloads included) survive; reshape feeds later ops with
    the right layout."""
    rng = rng_for("reshape-bits", dt)
    x = rng.integers(0, 256, size=(2, 3, 4 * 8), dtype=np.uint8).view(npdt(dt))
    x = np.ascontiguousarray(x)
    new_shape = (x.size // 4, 4)
    check(x, new_shape, run(_reshape(new_shape), {"x": x}), dt)
    # reshape -> reshape -> identity
    n = x.size
    y = run(lambda bld, x: bld.identity(bld.reshape(bld.reshape(x, [n]), [2, n // 2])),
            {"x": x})
    check(x, (2, n // 2), y, dt)


def test_reshape_then_broadcast(run):
    x = np.arange(24, dtype=np.float32)
    b = np.arange(4, dtype=np.float32) * 100
    got = run(lambda bld, x, b: bld.add(bld.reshape(x, [2, 3, 4]), b), {"x": x, "b": b})
    np.testing.assert_array_equal(got, x.reshape(2, 3, 4) + b)
    got = run(lambda bld, x, b: bld.add(bld.reshape(x, [4, 6]), bld.reshape(b, [4, 1])),
              {"x": x, "b": b})
    np.testing.assert_array_equal(got, x.reshape(4, 6) + b.reshape(4, 1))


# ---- reshapes as views (compiler/plan.c, WNN_PLAN_ALIAS) -------------------
# On the CPU a reshape into an intermediate takes no storage and runs no
# copy: its output is its input's bytes, whose lifetime the plan extends to
# the output's last reader.  These graphs check the values where that could
# go wrong (the input read again after the reshape, runs of reshapes, a
# graph input or output on either side, a constant) and that the arena
# really shrank.
def _conv_w(rng, o, c):
    return (rng.standard_normal((o, c, 1, 1)) * 0.5).astype(np.float32)


def test_view_of_intermediate_values_and_memory(ctx):
    """conv -> reshape -> reshape -> conv, + the first conv's output, relu:
    the reshapes are views of the first conv's output (which lives on for
    the add), so the plan's peak memory is that of the same graph without
    them (with copies it would hold a third buffer)."""
    import webnn
    rng = rng_for("reshape-view")
    x = rng.standard_normal((1, 6, 5, 8)).astype(np.float32)
    w1, w2 = _conv_w(rng, 12, 8), _conv_w(rng, 12, 12)
    nhwc = {"input_layout": "nhwc", "filter_layout": "ohwi"}

    def graph(views):
        b = webnn.MLGraphBuilder(ctx)
        xi = b.input("x", {"dataType": "float32", "shape": [1, 6, 5, 8]})
        a = b.conv2d(xi, b.constant(w1.transpose(0, 2, 3, 1).copy()), **nhwc)
        r = b.reshape(b.reshape(a, [1, 30, 12]), [1, 6, 5, 12]) if views else a
        y = b.conv2d(r, b.constant(w2.transpose(0, 2, 3, 1).copy()), **nhwc)
        return b.build({"y": b.relu(b.add(y, a))})

    g = graph(True)
    got = ctx.compute(g, {"x": x})["y"]
    a_ref = np.einsum("oc,nhwc->nhwo", w1[:, :, 0, 0].astype(np.float64), x)
    y_ref = np.einsum("oc,nhwc->nhwo", w2[:, :, 0, 0].astype(np.float64), a_ref)
    np.testing.assert_allclose(got, np.maximum(y_ref + a_ref, 0), rtol=1e-5, atol=1e-5)
    if ctx._device_type == "cpu":
        assert g.summary().peak_bytes == graph(False).summary().peak_bytes, g.summary()


def test_view_input_read_after_reshape(ctx):
    """The reshape's input is read again after the reshape's readers, and
    a node between them writes a buffer of the same size: the input must
    still hold its values (its lifetime covers the view's)."""
    rng = rng_for("reshape-view-late")
    x = rng.standard_normal((4, 6)).astype(np.float32)

    def build(bld, x):
        a = bld.exp(x)                      # intermediate
        r = bld.reshape(a, [6, 4])          # view of a
        t = bld.neg(bld.transpose(r))       # reads the view, same size as a
        u = bld.sigmoid(t)                  # another buffer of that size
        return {"y": bld.add(u, a), "z": bld.reshape(r, [24])}

    got = run_graph_dict(ctx, build, {"x": x})
    a = np.exp(x.astype(np.float64))
    ref = 1 / (1 + np.exp(a.reshape(6, 4).T)) + a
    np.testing.assert_allclose(got["y"], ref, rtol=1e-6, atol=1e-6)
    # z: a reshape into a graph output copies
    np.testing.assert_allclose(got["z"], a.reshape(24), rtol=1e-6)


def test_view_of_graph_input_and_constant(ctx):
    """A reshape of a graph input is a view of the caller's tensor (never
    written); a reshape of a constant copies; both feed a product."""
    rng = rng_for("reshape-view-input")
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    c = rng.standard_normal((12,)).astype(np.float32)

    def build(bld, x):
        xr = bld.reshape(x, [2, 12])
        cr = bld.reshape(bld.constant(c), [12, 1])
        return {"y": bld.matmul(xr, cr), "x2": bld.mul(xr, xr)}

    got = run_graph_dict(ctx, build, {"x": x})
    x64 = x.astype(np.float64).reshape(2, 12)
    np.testing.assert_allclose(got["y"], x64 @ c.reshape(12, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["x2"], x64 * x64, rtol=1e-6)
    assert np.array_equal(x, x.copy())


def test_view_of_graph_output(ctx):
    """The reshape's input is a graph output: the view must not move it,
    and both outputs are right."""
    rng = rng_for("reshape-view-output")
    x = rng.standard_normal((3, 8)).astype(np.float32)

    def build(bld, x):
        a = bld.tanh(x)
        return {"a": a, "y": bld.relu(bld.reshape(a, [4, 6]))}

    got = run_graph_dict(ctx, build, {"x": x})
    a = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(got["a"], a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["y"], np.maximum(a.reshape(4, 6), 0), rtol=1e-6, atol=1e-6)


def test_view_dispatch_twice(ctx):
    """The same graph dispatched twice with different inputs: the views
    resolve to the plan's storage each time."""
    import webnn
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", {"dataType": "float32", "shape": [2, 6]})
    y = b.add(b.reshape(b.exp(xi), [3, 4]), b.reshape(b.neg(xi), [3, 4]))
    g = b.build({"y": y})
    for seed in (1, 2):
        x = np.random.default_rng(seed).standard_normal((2, 6)).astype(np.float32)
        got = ctx.compute(g, {"x": x})["y"]
        ref = (np.exp(x.astype(np.float64)) - x).reshape(3, 4)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def run_graph_dict(ctx, build_fn, inputs):
    from .conftest import run_graph
    out = run_graph(ctx, build_fn, inputs)
    return out if isinstance(out, dict) else {"y": out}


def test_identity_view(ctx):
    """identity into an intermediate is a view too (ONNX Dropout at
    inference): values through it, its input read again afterwards, and
    one into a graph output still a copy of its own."""
    rng = rng_for("identity-view")
    x = rng.standard_normal((3, 7)).astype(np.float32)

    def build(bld, x):
        a = bld.exp(x)
        i = bld.identity(a)
        return {"y": bld.add(bld.sigmoid(i), a), "z": bld.identity(i)}

    got = run_graph_dict(ctx, build, {"x": x})
    a = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(got["y"], 1 / (1 + np.exp(-a)) + a, rtol=1e-6)
    np.testing.assert_allclose(got["z"], a, rtol=1e-6)
