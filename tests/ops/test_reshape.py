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
