"""Relations in long format: (identity, row, col) lines straight into privatize.

The long format (a tuple of three 1-d arrays, a pandas / pyarrow table, a
dict of arrays, or a Parquet file) must give exactly the relation sets and
the reports of the equivalent sequence and CSR forms: its clients are the
distinct identities in ascending order, keyed by those values, or the
caller's ``identities`` in their order.
"""

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from fastldp.relations import JPRS, PaddedRelationSampling, RelationSets
from fastldp.relations.relation_sets import as_relation_sets, is_long_format

SHAPE = (7, 9)
P = SHAPE[0] * SHAPE[1]
K = 4

MECHANISMS = {
    "jprs": lambda **kw: JPRS(shape=SHAPE, k=K, s=5, codebook_seed=11, n_threads=1, **kw),
    "p-rs-grr": lambda **kw: PaddedRelationSampling(shape=SHAPE, k=K, s=5, oracle="grr",
                                                    codebook_seed=11, n_threads=1, **kw),
    "p-rs-olh": lambda **kw: PaddedRelationSampling(shape=SHAPE, k=K, s=5, oracle="olh",
                                                    codebook_seed=11, n_threads=1, **kw),
}


def _population(seed=0, n=60, big_ids=False):
    """Distinct identity values (ascending), their pair sets, and shuffled long lines."""
    rng = np.random.default_rng(seed)
    if big_ids:  # values near 2**64: the key of the sort holds ranks
        values = np.unique(rng.integers(2**63, 2**64 - 1, n, dtype=np.uint64, endpoint=True))
        values[-1] = np.uint64(2**64 - 1)
    else:
        values = np.unique(rng.choice(10_000, n, replace=False)).astype(np.int64)
    sets = [np.sort(rng.choice(P, int(rng.integers(1, K + 1)), replace=False)) for _ in values]
    ident = np.repeat(values, [s.shape[0] for s in sets])
    enc = np.concatenate(sets)
    perm = rng.permutation(enc.shape[0])
    long = (ident[perm], enc[perm] // SHAPE[1], enc[perm] % SHAPE[1])
    return values, sets, long


def _sequence(sets):
    return [np.stack([s // SHAPE[1], s % SHAPE[1]], axis=1) for s in sets]


def _csr(sets):
    indptr = np.concatenate(([0], np.cumsum([s.shape[0] for s in sets])))
    idx = np.concatenate(sets) if sets else np.empty(0, np.int64)
    return sp.csr_matrix((np.ones(idx.shape[0]), idx, indptr), shape=(len(sets), P))


def _same_sets(a: RelationSets, b: RelationSets):
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.pairs, b.pairs)
    assert a.pairs.dtype == b.pairs.dtype == np.int64
    assert a.indptr.dtype == b.indptr.dtype == np.int64


# ------------------------------------------------------------ equivalence
@pytest.mark.parametrize("big_ids", [False, True])
def test_long_gives_the_sequence_and_csr_sets(big_ids):
    values, sets, long = _population(big_ids=big_ids)
    mech = MECHANISMS["jprs"]()
    got = mech.relation_sets(long)
    _same_sets(got, mech.relation_sets(_sequence(sets)))
    _same_sets(got, mech.relation_sets(_csr(sets)))
    assert got.identities.dtype == np.uint64
    np.testing.assert_array_equal(got.identities, values.astype(np.uint64))
    assert mech.relation_sets(_sequence(sets)).identities is None


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("big_ids", [False, True])
def test_long_privatizes_like_the_sequence_and_csr_forms(name, big_ids):
    values, sets, long = _population(seed=3, big_ids=big_ids)
    mech = MECHANISMS[name]()
    eps = np.random.default_rng(9).uniform(0.5, 2.0, values.shape[0])
    got = mech.privatize(long, epsilons=eps, rng=5)
    assert got.shape == (values.shape[0],)
    # the distinct identities, ascending, are the clients and key the codebook
    np.testing.assert_array_equal(got, mech.privatize(_sequence(sets), epsilons=eps, identities=values, rng=5))
    np.testing.assert_array_equal(got, mech.privatize(_csr(sets), epsilons=eps, identities=values, rng=5))
    if name == "jprs":  # keyed by the identity values, not by the default 0 .. n-1
        assert not np.array_equal(mech.set_scores(long)[0], mech.set_scores(_sequence(sets))[0])


def test_jprs_scores_and_probabilities_use_the_long_identities():
    values, sets, long = _population(seed=4)
    mech = MECHANISMS["jprs"]()
    seq = _sequence(sets)
    for a, b in zip(mech.set_scores(long), mech.set_scores(seq, identities=values)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(mech.output_probabilities(long, 1.0),
                                  mech.output_probabilities(seq, 1.0, identities=values))


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_caller_identities_define_population_and_order(name):
    values, sets, long = _population(seed=5, n=30)
    rng = np.random.default_rng(1)
    extra = np.array([20_000, 20_001, 20_002])  # no lines: empty sets
    population = rng.permutation(np.concatenate((values, extra)))
    by_value = dict(zip(values.tolist(), sets))
    ordered = [by_value.get(int(v), np.empty(0, np.int64)) for v in population]
    mech = MECHANISMS[name]()
    got = mech.relation_sets(long, identities=population)
    _same_sets(got, mech.relation_sets(_sequence(ordered), identities=population))
    _same_sets(got, mech.relation_sets(_csr(ordered), identities=population))
    np.testing.assert_array_equal(got.identities, population.astype(np.uint64))
    assert (got.sizes[np.isin(population, extra)] == 0).all()
    eps = rng.uniform(0.5, 2.0, population.shape[0])
    np.testing.assert_array_equal(
        mech.privatize(long, epsilons=eps, identities=population, rng=8),
        mech.privatize(_sequence(ordered), epsilons=eps, identities=population, rng=8),
    )


def test_caller_identities_in_ascending_order_need_no_gather():
    values, sets, long = _population(seed=6, n=20)
    population = np.concatenate(([0], values + 1))  # ascending, first one empty
    shifted = (long[0] + 1, long[1], long[2])
    mech = MECHANISMS["jprs"]()
    got = mech.relation_sets(shifted, identities=population)
    _same_sets(got, mech.relation_sets(_sequence([np.empty(0, np.int64)] + sets)))


def test_a_relation_sets_object_carries_its_identities():
    values, sets, long = _population(seed=7)
    mech = MECHANISMS["jprs"]()
    built = mech.relation_sets(long)
    np.testing.assert_array_equal(mech.privatize(built, epsilons=1.0, rng=2), mech.privatize(long, epsilons=1.0, rng=2))
    np.testing.assert_array_equal(mech.privatize(built, epsilons=1.0, identities=values, rng=2),
                                  mech.privatize(long, epsilons=1.0, rng=2))
    with pytest.raises(ValueError, match="'identities' parameter of JPRS"):
        mech.privatize(built, epsilons=1.0, identities=values + 1, rng=2)


def test_reports_decode_with_the_long_identities():
    values, sets, long = _population(seed=8, n=200)
    mech = MECHANISMS["jprs"]()
    bits = mech.privatize(long, epsilons=1.0, rng=3)
    ids = mech.relation_sets(long).identities
    est = mech.estimate(bits, epsilons=1.0, identities=ids)
    assert est.matrix.shape == SHAPE


# ------------------------------------------------------------ table inputs
def _tables(long, big_ids):
    """Every table form of the same lines (with an extra column, ignored)."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    ident, row, col = long
    extra = np.arange(ident.shape[0])
    df = pd.DataFrame({"ts": extra, "col": col, "identity": ident, "row": row})
    table = pa.table({"identity": ident, "row": row, "col": col, "ts": extra})
    chunked = pa.concat_tables([table.slice(0, 5), table.slice(5)])
    nullable, arrow = ("UInt64", "uint64[pyarrow]") if big_ids else ("Int64", "int64[pyarrow]")
    forms = {
        "tuple": long,
        "dict": {"row": row, "identity": ident, "col": col},
        "pandas": df,
        "pandas-nullable": df.astype({"identity": nullable, "row": "Int32", "col": "UInt8"}),
        "pandas-arrow": df.astype({"identity": arrow, "row": "int64[pyarrow]",
                                   "col": "int64[pyarrow]"}),
        "series-tuple": (df["identity"], df["row"], df["col"]),
        "pyarrow": table,
        "pyarrow-chunked": chunked,
        "record-batch": table.to_batches()[0],
        "arrow-stream": _ArrowStream(table),
        "interchange": _Interchange(table),
    }
    if not big_ids:  # Python ints beyond 2**63 become float64 in NumPy: refused (tested below)
        forms["dict-of-lists"] = {"identity": ident.tolist(), "row": row.tolist(),
                                  "col": col.tolist()}
    return forms


class _ArrowStream:
    """An object known only by the Arrow PyCapsule stream interface (polars, duckdb, ...)."""

    def __init__(self, table):
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


class _Interchange:
    """An object known only by the dataframe interchange protocol."""

    def __init__(self, table):
        self._table = table

    def __dataframe__(self, nan_as_null=False, allow_copy=True):
        return self._table.__dataframe__(nan_as_null, allow_copy)


@pytest.mark.parametrize("big_ids", [False, True])
def test_tables_and_parquet_give_the_same_sets(tmp_path, big_ids):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    values, sets, long = _population(seed=12, big_ids=big_ids)
    mech = MECHANISMS["jprs"]()
    want = mech.relation_sets(long)
    path = tmp_path / "relations.parquet"
    pq.write_table(pa.table({"identity": long[0], "row": long[1], "col": long[2],
                             "note": ["x"] * long[0].shape[0]}), path, row_group_size=7)
    forms = dict(_tables(long, big_ids), parquet_path=path, parquet_str=str(path))
    for name, form in forms.items():
        assert is_long_format(form), name
        got = mech.relation_sets(form)
        _same_sets(got, want)
        np.testing.assert_array_equal(got.identities, want.identities, err_msg=name)
        np.testing.assert_array_equal(mech.privatize(form, epsilons=1.0, rng=4),
                                      mech.privatize(long, epsilons=1.0, rng=4), err_msg=name)


def test_padded_sampling_reads_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    values, sets, long = _population(seed=13)
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table(dict(zip(("identity", "row", "col"), long))), path)
    mech = MECHANISMS["p-rs-olh"]()
    np.testing.assert_array_equal(mech.privatize(path, epsilons=1.0, rng=1),
                                  mech.privatize(_sequence(sets), epsilons=1.0, identities=values, rng=1))


def test_non_native_byte_order_and_small_dtypes():
    values, sets, long = _population(seed=14)
    mech = MECHANISMS["jprs"]()
    odd = (long[0].astype(">i8"), long[1].astype(np.uint8), long[2].astype(">u2"))
    _same_sets(mech.relation_sets(odd), mech.relation_sets(long))
    np.testing.assert_array_equal(mech.relation_sets(odd).identities, values)


# ------------------------------------------------------------ semantics
def test_duplicate_lines_are_refused_like_a_repeated_pair_in_the_sequence_form():
    mech = MECHANISMS["jprs"]()
    # sequence form: a pair twice in one identity's array is an error
    with pytest.raises(ValueError, match=r"at most once .* Got \(2, 3\) twice for identity 1"):
        mech.relation_sets([np.array([[0, 1]]), np.array([[2, 3], [2, 3]])])
    # long form: the same (identity, row, col) line twice is the same error
    long = (np.array([40, 41, 40, 41]), np.array([0, 2, 0, 2]), np.array([1, 3, 2, 3]))
    with pytest.raises(ValueError, match=r"at most once .* Got \(2, 3\) twice for identity 41"):
        mech.relation_sets(long)
    # the same pair for two identities is no repeat
    ok = mech.relation_sets((np.array([1, 2]), np.array([2, 2]), np.array([3, 3])))
    assert ok.sizes.tolist() == [1, 1]


def test_empty_inputs():
    mech = MECHANISMS["jprs"]()
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
    sets = mech.relation_sets(empty)
    assert sets.n == 0 and sets.pairs.size == 0 and sets.identities.size == 0
    sets = mech.relation_sets(empty, identities=[5, 2, 9])
    assert sets.indptr.tolist() == [0, 0, 0, 0]
    assert sets.identities.tolist() == [5, 2, 9]
    assert mech.privatize(empty, epsilons=1.0, identities=[5, 2, 9], rng=0).shape == (3,)
    # a tuple of exactly three 1-d arrays is the long format, even when empty
    assert is_long_format(([], [], []))
    assert not is_long_format([np.empty(0), np.empty(0), np.empty(0)])
    assert not is_long_format((np.array([[0, 1]]), np.array([[1, 1]]), np.array([[2, 1]])))


def test_cap_applies_to_the_long_identities():
    values, sets, long = _population(seed=15, n=40)
    rng = np.random.default_rng(0)
    big = rng.choice(P, K + 3, replace=False)
    ident = np.concatenate((long[0], np.full(big.shape[0], 77_777)))
    row = np.concatenate((long[1], big // SHAPE[1]))
    col = np.concatenate((long[2], big % SHAPE[1]))
    with pytest.raises(ValueError, match=r"at most k = 4 pairs .* Got 7 pairs for identity 77777"):
        MECHANISMS["jprs"]().relation_sets((ident, row, col))
    mech = MECHANISMS["jprs"](cap_policy="minhash")
    with pytest.warns(UserWarning, match="1 identities"):
        got = mech.relation_sets((ident, row, col))
    assert got.n_capped == 1
    # the min-hash cap is keyed by the identity value, as for the sequence form
    full_values = np.append(values, 77_777)
    with pytest.warns(UserWarning):
        want = mech.relation_sets(_sequence(sets + [np.sort(big)]), identities=full_values)
    _same_sets(got, want)


def test_as_relation_sets_takes_the_long_format_directly():
    values, sets, long = _population(seed=16)
    got = as_relation_sets(long, shape=SHAPE, k=K, owner="me")
    want = as_relation_sets(_sequence(sets), shape=SHAPE, k=K, owner="me")
    _same_sets(got, want)
    np.testing.assert_array_equal(got.identities, values)


# ------------------------------------------------------------ errors
@pytest.mark.parametrize("ident,row,col,exc,match", [
    ([1, -2], [0, 0], [0, 1], ValueError, r"identities in \[0, 2\*\*64\)\. Got -2 at line 1"),
    ([1, 2], [0, 7], [0, 1], ValueError, r"row in \[0, 7\) and col in \[0, 9\)\. Got \(7, 1\) for identity 2"),
    ([1, 2], [0, -1], [0, 1], ValueError, r"Got \(-1, 1\) for identity 2 \(line 1\)"),
    ([1, 2], [0, 1], [9, 1], ValueError, r"Got \(0, 9\) for identity 1 \(line 0\)"),
    (np.array([1, 2], np.uint64), np.array([0, 2**63 + 1], np.uint64), [0, 1], ValueError,
     r"Got \(9223372036854775809, 1\)"),
    ([1.0, np.nan], [0, 1], [0, 1], ValueError, r"'identity' column .* missing value \(NaN\) at line 1"),
    ([1, 2], [0.0, 1.5], [0, 1], ValueError, r"'row' column .* Got 1\.5 at line 1"),
    ([1, 2], [0.0, 1.0], [0, 1], TypeError, r"'row' column .* float64 column .* astype"),
    ([1, 2], [0, 1], [True, False], TypeError, r"'col' column .* Got a bool column"),
    (np.array(["a", "b"], object), [0, 1], [0, 1], TypeError, r"'identity' column .* object"),
    ([1, 2], [0, 1, 2], [0, 1], ValueError, r"equal length\. Got lengths 2, 3 and 2"),
])
def test_bad_columns_are_named(ident, row, col, exc, match):
    mech = MECHANISMS["jprs"]()
    with pytest.raises(exc, match="The 'relations' parameter of JPRS must"):
        mech.privatize((np.asarray(ident), np.asarray(row), np.asarray(col)), epsilons=1.0, rng=0)
    with pytest.raises(exc, match=match):
        mech.relation_sets((np.asarray(ident), np.asarray(row), np.asarray(col)))


def test_python_ints_beyond_int64_become_floats_and_are_refused():
    mech = MECHANISMS["jprs"]()
    with pytest.raises(TypeError, match="'identity' column"):
        mech.relation_sets(([1, 2**64 - 1], [0, 0], [0, 0]))
    got = mech.relation_sets((np.array([1, 2**64 - 1], np.uint64), [0, 0], [0, 0]))
    assert got.identities.tolist() == [1, 2**64 - 1]


def test_missing_values_in_tables():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    mech = MECHANISMS["jprs"]()
    df = pd.DataFrame({"identity": pd.array([1, None, 3], dtype="Int64"), "row": [0, 1, 2],
                       "col": [0, 0, 0]})
    with pytest.raises(ValueError, match=r"'identity' column .* missing value .* line 1"):
        mech.relation_sets(df)
    table = pa.table({"identity": [1, 2, 3], "row": [0, None, 2], "col": [0, 0, 0]})
    with pytest.raises(ValueError, match=r"'row' column .* missing value .* line 1"):
        mech.relation_sets(table)


def test_missing_columns_are_named():
    pd = pytest.importorskip("pandas")
    mech = MECHANISMS["jprs"]()
    df = pd.DataFrame({"user": [1], "row": [0], "col": [0]})
    with pytest.raises(ValueError, match=r"columns 'identity', 'row' and 'col' .* \(no 'identity'\)"):
        mech.relation_sets(df)
    with pytest.raises(ValueError, match=r"no 'col'"):
        mech.relation_sets({"identity": [1], "row": [0]})


def test_identities_missing_from_the_population_are_named():
    mech = MECHANISMS["jprs"]()
    long = (np.array([5, 8, 5, 3]), np.array([0, 1, 2, 0]), np.array([0, 0, 0, 1]))
    with pytest.raises(ValueError, match=r"'relations' parameter of JPRS .* listed in 'identities'\. "
                                         r"Got identity 8 at line 1 \(2 distinct"):
        mech.privatize(long, epsilons=1.0, identities=[5, 1, 2], rng=0)
    # the caller's identities follow resolve_identities' rules
    with pytest.raises(ValueError, match=r"'identities' parameter .* 'repeated identities'"):
        mech.relation_sets(long, identities=[5, 8, 3, 5])
    with pytest.raises(ValueError, match=r"'identities' parameter .* 'negative identity -1'"):
        mech.relation_sets(long, identities=[5, 8, 3, -1])
    with pytest.raises(TypeError, match=r"'identities' parameter"):
        mech.relation_sets(long, identities=[5.0, 8.0, 3.0])
    # epsilons follow the population
    with pytest.raises(ValueError, match=r"'epsilons' parameter .* length 4"):
        mech.privatize(long, epsilons=[1.0, 1.0, 1.0], identities=[5, 8, 3, 4], rng=0)


def test_bad_paths(tmp_path):
    mech = MECHANISMS["jprs"]()
    with pytest.raises(ValueError, match=r"'relations' parameter of JPRS .* existing Parquet file.* "
                                         r"not a file"):
        mech.privatize(str(tmp_path / "nope.parquet"), epsilons=1.0, rng=0)
    with pytest.raises(ValueError, match="not a file"):
        mech.relation_sets(tmp_path)  # a directory
    pytest.importorskip("pyarrow")
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(ValueError, match=r"Parquet file with columns .* pyarrow cannot read"):
        mech.relation_sets(junk)


def test_parquet_without_its_columns(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"identity": [1], "r": [0], "col": [0]}), path)
    with pytest.raises(ValueError, match=r"no 'row'"):
        MECHANISMS["jprs"]().relation_sets(path)


def test_parquet_without_pyarrow_says_which_extra(tmp_path, monkeypatch):
    path = tmp_path / "r.parquet"
    path.write_bytes(b"PAR1")
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"pip install fastldp\[parquet\]"):
        MECHANISMS["jprs"]().relation_sets(path)


@pytest.mark.parametrize("ident", [
    [3, 1, 7, 1],                      # identity * p + pair fits in uint64
    [3, 1, 9, 1, 2**64 - 1],           # ranks * p + pair fits
    [3, 1, 9, 1, 10, 11, 12, 13, 14, 15, 2**64 - 1],  # neither: the two-key sort
])
def test_every_sort_path_for_a_huge_table(ident):
    shape = (2**31, 2**30)  # p = 2**61
    ident = np.array(ident, dtype=np.uint64)
    rows = np.arange(ident.shape[0], dtype=np.int64) * 1000 % shape[0]
    cols = (np.arange(ident.shape[0], dtype=np.int64) * 7919 + 5) % shape[1]
    got = as_relation_sets((ident, rows, cols), shape=shape, k=K, owner="me")
    values = np.unique(ident)
    seq = [np.stack([rows[ident == v], cols[ident == v]], axis=1) for v in values]
    want = as_relation_sets(seq, shape=shape, k=K, owner="me")
    _same_sets(got, want)
    np.testing.assert_array_equal(got.identities, values)
    dup = (np.append(ident, ident[1]), np.append(rows, rows[1]), np.append(cols, cols[1]))
    with pytest.raises(ValueError, match=f"twice for identity {int(ident[1])} "):
        as_relation_sets(dup, shape=shape, k=K, owner="me")
