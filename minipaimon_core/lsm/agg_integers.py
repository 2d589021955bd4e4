"""Integer ``sum`` (``count``) and ``product`` without wrapping: a fold step whose result
leaves the column's type (TINYINT, SMALLINT, INT, BIGINT) raises OverflowError, which the
aggregation turns into InvalidArgumentError naming the column.

Current Paimon fails such a step (``FieldSumAgg`` / ``FieldProductAgg`` with Java's
``addExact`` / ``multiplyExact``, apache/paimon#7992: a wrapped sum is data corruption);
Paimon 0.9 wrapped silently. Every step counts, as in Java's fold: ``MAX + 1 - 1`` fails
at ``MAX + 1``, and a retraction from the null state negates (``-MIN`` fails).

* sums: exact prefix sums of each group, vectorised. Each 64-bit value is split into its
  high 32 bits (signed) and low 32 bits, whose running sums cannot overflow int64 (below
  2**31 rows a merge); a prefix fits iff its normalised high part fits 32 bits (and, for
  the narrower types, the int64 prefix fits the type).
* products: a group's magnitude never shrinks before its first zero (every other factor is
  at least 1 in magnitude), so the sum of log2 |x| there bounds every prefix; a column
  whose bound reaches the type's width is folded exactly, step by step
  (:func:`minipaimon_core.lsm.agg_sequential.product` with :func:`checked_step`).
"""

from __future__ import annotations

import numpy as np

from .merge_groups import Groups

_LOW = np.int64(0xFFFFFFFF)
_NAMES = {8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}


def type_name(info: np.iinfo) -> str:
    """Paimon's name of the integer type of ``info``'s width."""
    return _NAMES.get(info.bits, f"INT{info.bits}")


def checked_sums(v: np.ndarray, seen: np.ndarray, retract: np.ndarray, g: Groups,
                 info: np.iinfo) -> np.ndarray:
    """Per group of ``g``, the sum (int64) of the values ``v`` (int64, sorted positions)
    where ``seen``, subtracting those ``retract`` marks; 0 for a group with none. Raises
    OverflowError at the first step (in merge order) whose sum leaves ``info``'s range."""
    sign = np.where(seen, np.where(retract, -1, 1), 0).astype(np.int64)
    hi, lo = sign * (v >> 32), sign * (v & _LOW)
    run_hi, run_lo = np.cumsum(hi), np.cumsum(lo)
    base_hi = (run_hi - hi)[g.starts][g.gid]  # what the groups before contribute
    base_lo = (run_lo - lo)[g.starts][g.gid]
    p_hi, p_lo = run_hi - base_hi, run_lo - base_lo  # prefix of the row's own group
    high = p_hi + (p_lo >> 32)  # the prefix is high * 2**32 + (p_lo & 0xFFFFFFFF)
    fits = (high >= -(1 << 31)) & (high < (1 << 31))
    total = np.where(fits, high, 0) * np.int64(1 << 32) + (p_lo & _LOW)
    if info.bits < 64:
        fits &= (total >= info.min) & (total <= info.max)
    over = seen & ~fits
    if over.any():
        at = int(np.flatnonzero(over)[0])
        before = (int(p_hi[at] - hi[at]) << 32) + int(p_lo[at] - lo[at])
        first = g.first_where(seen)[g.gid[at]] == at
        step = (f"-({int(v[at])})" if first else f"{before} - {int(v[at])}") if retract[at] \
            else f"{before} + {int(v[at])}"
        raise OverflowError(f"the {type_name(info)} sum overflows at {step}")
    return total[g.ends]


def product_may_overflow(v: np.ndarray, seen: np.ndarray, g: Groups, info: np.iinfo) -> bool:
    """Whether a product of some group of the values ``v`` (sorted positions, where
    ``seen``) may leave ``info``'s range at some step (a bound: False is certain)."""
    zero = seen & (v == 0)
    first_zero = np.minimum.reduceat(np.where(zero, np.arange(len(v)), len(v)), g.starts)
    counted = seen & ~zero & (np.arange(len(v)) < first_zero[g.gid])
    with np.errstate(divide="ignore"):
        bits = np.where(counted, np.log2(np.abs(v.astype(np.float64))), 0.0)
    return bool((np.add.reduceat(bits, g.starts) > info.bits - 1.5).any())


def checked_step(acc: np.ndarray, x: np.ndarray, retract: np.ndarray, info: np.iinfo) -> np.ndarray:
    """``acc * x``, or ``acc / x`` (truncating toward zero) where ``retract``, exactly, as
    int64. Raises OverflowError if a result leaves ``info``'s range, ZeroDivisionError for
    a retraction by zero. NumPy in int64 where that is exact (always below 64 bits); the
    few BIGINT steps near the range's ends in Python integers."""
    a, b = acc.astype(np.int64), x.astype(np.int64)
    if (retract & (b == 0)).any():
        raise ZeroDivisionError("a retraction divides an integer by zero")
    exact = np.zeros(len(a), bool)
    if info.bits == 64:  # |a * b| >= 2**62, or MIN / x, x / MIN: computed in Python below
        with np.errstate(over="ignore"):
            big = np.abs(a.astype(np.float64)) * np.abs(b.astype(np.float64)) >= 2.0 ** 62
        exact = np.where(retract, (a == info.min) | (b == info.min), big)
    safe = np.where((b == 0) | exact, 1, b)
    a_ = np.where(exact, 0, a)
    with np.errstate(over="ignore"):
        out = np.where(retract, np.sign(a_) * np.sign(safe) * (np.abs(a_) // np.abs(safe)), a_ * b)
    results: dict[int, int] = {}
    for i in np.flatnonzero(exact).tolist():  # rare: Python integers
        p, q = int(a[i]), int(b[i])
        results[i] = (abs(p) // abs(q) * (1 if (p < 0) == (q < 0) else -1)) if retract[i] else p * q
    over = (out < info.min) | (out > info.max)
    for i, r in results.items():
        over[i] = not info.min <= r <= info.max
        if not over[i]:
            out[i] = r
    if over.any():
        i = int(np.flatnonzero(over)[0])
        op = "/" if retract[i] else "*"
        raise OverflowError(f"the {type_name(info)} product overflows at {int(a[i])} {op} {int(b[i])}")
    return out
