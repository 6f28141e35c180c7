"""Every streaming estimator answers the questions of ``fastldp.protocol.StreamingMechanism``.

The shared machinery (report files, Dask, the collector, ``fastldp simulate``,
the ledger) asks a mechanism about itself instead of asking for its class, so
each family must answer: its spec (which rebuilds it), its report schema
(which must equal what the collector derived before the protocol, since stores
record it), the privacy statement of a release, synthetic inputs, and how the
dashboard draws it. The reference functions below are frozen copies of the code
that answered these questions from outside the families before (the collector's
``probe_reports`` and ``fastldp.mechanisms``' simulation chunks), so that the
families' answers are checked against what files and stores already hold.
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp

import fastldp
from fastldp import mechanisms, protocol, reports
from fastldp._random import as_generator
from fastldp.protocol import KINDS, ReportSchema, StreamingMechanism

F = fastldp

# --------------------------------------------------------------------------- the classes
#: the names of ``fastldp.mechanisms.STREAMING`` before the protocol (issue 33)
TODAYS_STREAMING = [
    "JPRS", "PaddedRelationSampling", "GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE",
    "FrequencyOracle", "CMS", "HCMS", "SubsetSelection", "BLH", "AdaptiveOracle", "SHE", "THE",
    "RAPPOR", "DiscreteSHE", "RPC", "PCKVUE", "PCKVGRR", "PrivKVM", "Succinct", "Collision",
    "LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE", "LongitudinalOracle", "LongitudinalRAPPOR",
    "DBitFlipPM", "PEM", "TreeHist", "SFP", "HeavyHitterProtocol",
    "SPL", "SMP", "RSpFD", "SampledMean", "SplitMean",
    "FullDomain",  # multidim (issue 36), added after
    "LSPL", "LSMP",  # multi-attribute records over time, in longitudinal (issue 36)
    "FlatRange", "HierarchicalHistogram",  # ranges (issue 35)
    "SquareWave",  # ranges (issue 35, item 4)
    "HaarHRR",  # ranges (issue 35, item 3)
    "InpRR", "InpPS", "InpHT", "MargRR", "MargPS", "MargHT", "CALM"]  # marginals (issue 36)
#: the families' abstract bases: listed (they are exported), never built here
ABSTRACT = {"FrequencyOracle", "LongitudinalOracle", "HeavyHitterProtocol"}

_ORACLES = ("GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "CMS", "HCMS",
            "SubsetSelection", "BLH", "AdaptiveOracle", "SHE", "THE", "DiscreteSHE")
_MEMOIZED = ("LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE")

#: small instances of every class (key: the class name, or "name/variant")
INSTANCES = {
    **{n: (lambda n=n: getattr(F, n)(domain_size=12, epsilon=2.0, codebook_seed=1))
       for n in _ORACLES},
    "RAPPOR": lambda: F.RAPPOR(domain_size=12, epsilon=2.0, n_bits=16, n_cohorts=2,
                               codebook_seed=1),
    "GRR/personal": lambda: F.GRR(domain_size=12, epsilon=None, codebook_seed=1),
    "OUE/labels": lambda: F.OUE(epsilon=1.0, categories=["web", "ios", "android"],
                                codebook_seed=2),
    "OLH/int-labels": lambda: F.OLH(epsilon=1.0, categories=[10, 20, 30, 40], codebook_seed=2),
    **{n: (lambda n=n: getattr(F, n)(domain_size=12, epsilon_inf=4.0, epsilon_1=2.0,
                                     codebook_seed=1)) for n in _MEMOIZED},
    "LongitudinalRAPPOR": lambda: F.LongitudinalRAPPOR(domain_size=12, n_bits=16, n_cohorts=2,
                                                       epsilon_inf=4.0, epsilon=1.0,
                                                       codebook_seed=1),
    "DBitFlipPM": lambda: F.DBitFlipPM(domain_size=12, n_sampled=2, epsilon_inf=4.0,
                                       epsilon=2.0, codebook_seed=1),
    "JPRS": lambda: F.JPRS(shape=(6, 7), k=2, s=4, epsilon=1.0, codebook_seed=1),
    "JPRS/personal": lambda: F.JPRS(shape=(6, 7), k=3, s=5, codebook_seed=2),
    "PaddedRelationSampling": lambda: F.PaddedRelationSampling(
        shape=(6, 7), k=2, s=4, oracle="olh", epsilon=1.0, codebook_seed=1),
    "PaddedRelationSampling/personal": lambda: F.PaddedRelationSampling(
        shape=(5, 5), k=3, s=4, oracle="grr", codebook_seed=3),
    "RPC": lambda: F.RPC(d=20, m=3, epsilon=1.0, codebook_seed=1),
    "RPC/rounded": lambda: F.RPC(d=20, m=3, epsilon=1.5, values="rounded", codebook_seed=3),
    "PCKVUE": lambda: F.PCKVUE(d=20, m=3, epsilon=1.0),
    "PCKVGRR": lambda: F.PCKVGRR(d=20, m=3, epsilon=1.0),
    "PrivKVM": lambda: F.PrivKVM(d=20, m=3, epsilon=1.0),
    "Succinct": lambda: F.Succinct(d=20, m=3, epsilon=1.0, R=2.0, codebook_seed=1),
    "Collision": lambda: F.Collision(d=20, m=3, epsilon=1.0, codebook_seed=1),
    "Collision/signed": lambda: F.Collision(d=20, m=3, epsilon=1.0, values="signed",
                                            codebook_seed=1),
    "PEM": lambda: F.PEM(epsilon=2.0, k=10, item_bits=8, codebook_seed=1),
    "PEM/bytes": lambda: F.PEM(epsilon=2.0, k=5, item_bytes=2, codebook_seed=1),
    "TreeHist": lambda: F.TreeHist(epsilon=2.0, k=10, c=1, eta=4, threshold=None, item_bits=8,
                                   codebook_seed=1),
    "SFP": lambda: F.SFP(epsilon=2.0, k=10, c=1, fragment_bits=4, puzzle_bits=1, item_bits=8,
                         codebook_seed=1),
    "SPL": lambda: F.SPL(domain_sizes=[3, 12, 2], epsilon=2.0, oracle="GRR", codebook_seed=1),
    "SPL/olh": lambda: F.SPL(domain_sizes=[3, 12, 2], epsilon=2.0, oracle="OLH",
                             codebook_seed=1),
    "SMP": lambda: F.SMP(domain_sizes=[3, 12, 2], epsilon=2.0, oracle="OUE", codebook_seed=1),
    "RSpFD": lambda: F.RSpFD(domain_sizes=[3, 12, 2], epsilon=2.0, variant="GRR",
                             codebook_seed=1),
    "RSpFD/oue-random": lambda: F.RSpFD(domain_sizes=[3, 12, 2], epsilon=2.0,
                                        variant="OUE-random", codebook_seed=1),
    "SampledMean": lambda: F.SampledMean(dimension=6, epsilon=6.0, randomizer="Piecewise", k=2),
    "SplitMean": lambda: F.SplitMean(dimension=6, epsilon=2.0, randomizer="Duchi"),
    "FullDomain": lambda: F.FullDomain(domain_sizes=[3, 4, 2], epsilon=2.0, codebook_seed=1),
    "FullDomain/grr": lambda: F.FullDomain(domain_sizes=[3, 4], epsilon=2.0, oracle="GRR",
                                           codebook_seed=1),
    # oracle="auto" mixing GRR and OUE parts: int64 rows, a byte per column for OUE's bits
    "SPL/auto": lambda: F.SPL(domain_sizes=[3, 40, 2], epsilon=2.0, oracle="auto",
                              codebook_seed=1),
    "RSpFD/auto": lambda: F.RSpFD(domain_sizes=[3, 40, 2], epsilon=2.0, variant="auto",
                                  codebook_seed=1),
    "LSPL": lambda: F.LSPL(domain_sizes=[3, 12, 2], epsilon_inf=4.0, epsilon_1=2.0,
                           codebook_seed=1),
    "LSMP/losue": lambda: F.LSMP(domain_sizes=[3, 12, 2], epsilon_inf=4.0, epsilon_1=2.0,
                                 oracle="LOSUE", codebook_seed=1),
    "FlatRange": lambda: F.FlatRange(epsilon=2.0, domain_size=12, codebook_seed=1),
    "SquareWave": lambda: F.SquareWave(epsilon=2.0, bins=16),
    "HaarHRR": lambda: F.HaarHRR(epsilon=2.0, domain_size=12, codebook_seed=1),
    **{n: (lambda n=n: getattr(F, n)(n_attributes=3, epsilon=2.0, codebook_seed=1))
       for n in ("InpRR", "InpPS")},
    **{n: (lambda n=n: getattr(F, n)(n_attributes=4, k=2, epsilon=2.0, codebook_seed=1))
       for n in ("InpHT", "MargRR", "MargPS", "MargHT")},
    "CALM": lambda: F.CALM(domain_sizes=[3, 4, 2], epsilon=2.0, codebook_seed=1),
    "CALM/olh": lambda: F.CALM(domain_sizes=[3, 4, 2], epsilon=2.0, oracle="OLH",
                               codebook_seed=1),
    "HierarchicalHistogram": lambda: F.HierarchicalHistogram(epsilon=2.0, domain_size=12,
                                                             branching=2, codebook_seed=1),
    "HierarchicalHistogram/budget-olh": lambda: F.HierarchicalHistogram(
        epsilon=2.0, domain_size=12, branching=3, oracle="olh", split="budget",
        codebook_seed=1),
}

#: the report schemas of the instances above, as the collector recorded them before the
#: protocol (``probe_reports``; for the classes it could not probe, the reports' layout)
SCHEMAS = {
    **dict.fromkeys(("GRR", "OLH", "HadamardResponse", "BLH", "AdaptiveOracle", "LGRR", "PEM",
                     "PaddedRelationSampling", "Collision"), ("int64", ())),
    **dict.fromkeys(("OUE", "SUE", "SubsetSelection", "THE", "RAPPOR", "LOUE", "LOSUE", "LSUE",
                     "LSOUE", "LongitudinalRAPPOR"), ("uint8", (2,))),
    "FLH": ("int64", (2,)), "CMS": ("int64", (17,)), "HCMS": ("int64", (3,)),
    "SHE": ("float64", (12,)), "DiscreteSHE": ("int64", (12,)), "DBitFlipPM": ("int64", (2,)),
    "JPRS": ("int8", ()), "RPC": ("float64", ()), "PCKVUE": ("int8", (23,)),
    "PCKVGRR": ("int64", (2,)), "PrivKVM": ("int64", (5,)), "Succinct": ("float64", (1,)),
    "TreeHist": ("int64", (3,)), "SFP": ("int64", (10,)),
    "SPL": ("int64", (3,)), "SMP": ("uint8", (4,)), "RSpFD/oue-random": ("uint8", (4,)),
    "SampledMean": ("float64", (4,)), "SplitMean": ("float64", (12,)),
    "FullDomain": ("int64", ()),
    "SPL/auto": ("int64", (7,)), "RSpFD/auto": ("int64", (7,)), "LSPL": ("int64", (3,)),
    "LSMP/losue": ("uint8", (4,)),
}

KIND_OF_FAMILY = {"oracles": "counts", "longitudinal": "counts", "relations": "matrix",
                  "vectors": "vector", "heavyhitters": "ranking", "multidim": "counts",
                  "ranges": "distribution"}
#: classes whose kind is not their family's: multidim's means of numeric vectors
KIND_OF_CLASS = {"SampledMean": "vector", "SplitMean": "vector"}


def _family(mech):
    return type(mech).__module__.split(".")[1]


def _personal(mech):
    return mech.report_schema.fixed_epsilon is None


# ------------------------------------------------------------ frozen copies of the old code
def _old_relations_chunk(mech, n, rng):
    """``fastldp.mechanisms._relations_chunk`` before the protocol (frozen; since issue 37
    the hot pairs come from the codebook purpose's keyed stream of ``codebook_seed``)."""
    public = as_generator(mech.codebook_seed, purpose="codebook")
    hot = public.choice(mech.p, size=mech.s, replace=False)
    sizes = rng.integers(1, mech.k + 1, n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    start = rng.integers(0, mech.s, n)
    offsets = np.arange(indptr[-1]) - np.repeat(indptr[:-1], sizes)
    pairs = hot[(np.repeat(start, sizes) + offsets) % mech.s]
    data = np.ones(pairs.shape[0], dtype=np.int8)
    return sp.csr_matrix((data, pairs, indptr), shape=(n, mech.p))


def _old_label_array(labels):
    kinds = {type(label) for label in labels}
    if kinds == {str}:
        return np.array(labels, dtype=str)
    if kinds == {int} and all(-2**63 <= v < 2**63 for v in labels):
        return np.array(labels, dtype=np.int64)
    out = np.empty(len(labels), dtype=object)
    out[:] = list(labels)
    return out


def _old_values_chunk(mech, n, rng):
    """``fastldp.mechanisms._values_chunk`` before the protocol (frozen)."""
    D = mech.domain_size
    w = 1.0 / np.arange(1, D + 1) ** 1.1
    symbols = rng.choice(D, size=n, p=w / w.sum())
    labels = getattr(mech, "categories", None)
    if labels is None:
        return symbols
    return _old_label_array(labels)[symbols]


def _old_probe(mech):
    """``fastldp.service.app.probe_reports`` before the protocol (frozen); None: it refused."""
    rng = np.random.default_rng(0)
    eps = None if reports._fixed_epsilon(mech) is not None else np.ones(2)
    if isinstance(mech, (F.JPRS, F.PaddedRelationSampling)):
        data = _old_relations_chunk(mech, 2, rng)
    elif isinstance(mech, F.oracles.FrequencyOracle):
        data = _old_values_chunk(mech, 2, rng)
    elif hasattr(mech, "d"):
        data = np.zeros((2, int(mech.d)))
    else:
        return None
    kwargs = {"epsilons": eps} if eps is not None else {}
    out = np.asarray(mech.privatize(data, identities=np.arange(2), rng=rng, **kwargs))
    kind = reports._report_kind(mech)
    if kind == "integer" or (kind is None and out.dtype.kind in "biu"):
        dtype = np.dtype(np.int8) if out.dtype.kind == "b" else out.dtype
    else:
        dtype = np.dtype(np.float64)
    return tuple(out.shape[1:]), dtype


# --------------------------------------------------------------------------- the registry
def test_streaming_classes_are_the_streaming_estimators_of_before():
    classes = protocol.streaming_classes()
    assert sorted(classes) == sorted(TODAYS_STREAMING)
    for name, cls in classes.items():
        assert cls.__name__ == name and getattr(fastldp, _family_of_class(cls)) is not None
    # every class but the abstract bases has an instance here
    assert set(TODAYS_STREAMING) - ABSTRACT == {key.split("/")[0] for key in INSTANCES}


def _family_of_class(cls):
    return cls.__module__.split(".")[1]


def test_a_class_without_the_members_is_not_listed():
    class Half:  # a decode but no client, schema or self-description
        def stream_params(self): return {}
        def partial(self, reports, epsilons=None, identities=None): ...
        def merge(self, a, b): ...
        def finalize(self, partial): ...
        def estimate(self, reports, *, epsilons=None, identities=None): ...

    assert not protocol._implements(Half)
    with pytest.raises(TypeError, match="implements fastldp.protocol.StreamingMechanism"):
        protocol.register(Half)
    with pytest.raises(TypeError, match="lacks report_schema, spec, privatize"):
        protocol.check_mechanism(Half())


# --------------------------------------------------------------------------- the members
@pytest.fixture(params=sorted(INSTANCES))
def case(request):
    return request.param, INSTANCES[request.param]()


def test_the_members_are_there(case):
    key, mech = case
    members = [m for m in dir(StreamingMechanism) if not m.startswith("_")]
    missing = [m for m in members if not hasattr(mech, m)]
    # channels is the audit's (its laws move into the families in the same issue)
    assert missing in ([], ["channels"]), key
    if not missing:
        assert isinstance(mech, StreamingMechanism)
        protocol.check_mechanism(mech)
    kind = KIND_OF_CLASS.get(type(mech).__name__, KIND_OF_FAMILY[_family(mech)])
    assert mech.kind in KINDS and mech.kind == kind, key
    labels = getattr(mech, "categories", None) if _family(mech) == "oracles" else None
    if type(mech).__name__ in ("SPL", "SMP", "RSpFD", "LSPL", "LSMP"):  # "j=v": attribute j, v
        labels = tuple(f"{j}={v}" for j, k in enumerate(mech.domain_sizes) for v in range(k))
    assert mech.labels == labels
    assert isinstance(mech.report_schema, ReportSchema)


def test_the_report_schema_is_what_stores_recorded(case):
    key, mech = case
    schema = mech.report_schema
    old = _old_probe(mech)
    if old is not None and key.split("/")[0] != "PrivKVM":  # the old probe failed on PrivKVM
        assert (schema.shape, schema.dtype) == old, key
    if key in SCHEMAS:
        assert (str(schema.dtype), schema.shape) == SCHEMAS[key], key
    assert schema.fixed_epsilon == reports._fixed_epsilon(mech)
    assert schema.integer == (reports._report_kind(mech) == "integer"), key
    # the float reports are those of SHE, RPC, Succinct, multidim's means and Square Wave
    assert (not schema.integer) == (key.split("/")[0] in ("SHE", "RPC", "Succinct", "SampledMean",
                                                          "SplitMean", "SquareWave"))


def test_the_spec_rebuilds_the_mechanism(case):
    key, mech = case
    spec = mech.spec()
    assert spec == {"mechanism": type(mech).__name__, "params": mech.stream_params()}
    assert spec == mechanisms.mechanism_spec(mech)
    again = mechanisms.from_spec(json.loads(json.dumps(spec)))
    assert type(again) is type(mech) and again.spec() == spec
    schema, rebuilt = mech.report_schema, again.report_schema
    assert (rebuilt.dtype, rebuilt.shape) == (schema.dtype, schema.shape), key
    if _family(mech) == "relations":
        # a relation spec does not carry the constructor's epsilon (files written before
        # the protocol must keep rebuilding): the rebuilt server reads the stored budgets
        assert rebuilt.fixed_epsilon is None
    else:
        assert rebuilt.fixed_epsilon == schema.fixed_epsilon, key


def _reports(mech, data, rng, identities):
    kwargs = {}
    if _personal(mech):
        kwargs["epsilons"] = rng.choice([0.5, 1.0, 2.0], len(identities))
    out = mech.privatize(data, identities=identities, rng=rng, **kwargs)
    return out, kwargs.get("epsilons")


def test_example_data_privatizes_to_reports_of_the_schema(case):
    key, mech = case
    rng = np.random.default_rng(4)
    data = mech.example_data(60, rng)
    assert (data.shape[0] if hasattr(data, "shape") else len(data)) == 60
    out, _ = _reports(mech, data, rng, np.arange(60, dtype=np.uint64))
    arr = np.asarray(out)
    schema = mech.report_schema
    assert arr.shape == (60, *schema.shape), key
    assert np.can_cast(arr.dtype, schema.dtype, "safe") or arr.dtype.kind == "b", key
    assert np.array_equal(arr.astype(schema.dtype), arr), key  # castable without loss


def test_example_data_is_deterministic_given_the_generator(case):
    key, mech = case
    a = mech.example_data(50, np.random.default_rng(9))
    b = mech.example_data(50, np.random.default_rng(9))
    if sp.issparse(a):
        assert (a != b).nnz == 0 and a.dtype == b.dtype
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b)) and np.asarray(a).dtype == np.asarray(b).dtype


def _same_result(got, want, key):
    for field in ("estimate", "variances"):
        a, b = getattr(got, field, None), getattr(want, field, None)
        if b is None:
            assert a is None, (key, field)
            continue
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (
            key, field)
    assert got.n == want.n and got.sanitization == want.sanitization, key


def test_merged_partials_finalize_to_the_estimate(case):
    key, mech = case
    rng = np.random.default_rng(6)
    n, cut = 300, 117
    ids = np.arange(n, dtype=np.uint64) * 3 + 5
    out, eps = _reports(mech, mech.example_data(n, rng), rng, ids)
    e_a = None if eps is None else eps[:cut]
    e_b = None if eps is None else eps[cut:]
    a = mech.partial(out[:cut], e_a, ids[:cut])
    b = mech.partial(out[cut:], e_b, ids[cut:])
    want = mech.estimate(out, epsilons=eps, identities=ids)
    _same_result(mech.finalize(mech.merge(a, b)), want, key)
    _same_result(mech.finalize(mech.merge(b, a)), want, key)
    # the stored form (what a report file holds) decodes the same
    stored = np.asarray(out).astype(mech.report_schema.dtype)
    _same_result(mech.finalize(mech.partial(stored, eps, ids)), want, key)


def test_privacy_is_the_statement_of_the_estimate(case):
    key, mech = case
    rng = np.random.default_rng(8)
    ids = np.arange(80, dtype=np.uint64)
    out, eps = _reports(mech, mech.example_data(80, rng), rng, ids)
    statement = mech.privacy(eps)
    assert statement == mech.estimate(out, epsilons=eps, identities=ids).privacy, key
    if not _personal(mech):
        assert mech.privacy() == statement and statement.epsilon == mech.epsilon
        assert mech.privacy(mech.epsilon) == statement
    else:
        assert statement.personal and statement.epsilon_max == 2.0
        assert mech.privacy().personal and mech.privacy().epsilon is None


@pytest.mark.parametrize("key", ["RPC", "PrivKVM", "LGRR", "DBitFlipPM", "PEM", "SFP"])
def test_a_mechanism_without_personal_budgets_refuses_another_budget_in_privacy(key):
    mech = INSTANCES[key]()
    with pytest.raises(ValueError, match="'epsilons' parameter of .*privacy"):
        mech.privacy(7.0)


@pytest.mark.parametrize("key", ["GRR", "JPRS", "PaddedRelationSampling/personal"])
def test_personal_budgets_in_privacy_are_checked_and_stated(key):
    # oracles and relations take budgets per call (other than the constructor's): the
    # statement states those, and a budget that is not > 0 is refused
    mech = INSTANCES[key]()
    assert mech.privacy(7.0).epsilon == 7.0
    assert mech.privacy([1.0, 3.0]).epsilon_max == 3.0
    for bad in (-1.0, float("nan"), [1.0, 0.0]):
        with pytest.raises(ValueError, match="'epsilons' parameter of .*privacy"):
            mech.privacy(bad)


def test_the_privacy_event_is_what_a_ledger_charges():
    pytest.importorskip("dp_accounting")
    grr = INSTANCES["GRR"]()
    assert grr.privacy().event() == F.accounting.pure_dp_event(2.0)
    lgrr = INSTANCES["LGRR"]()  # a release of reports: each at epsilon_1
    assert lgrr.privacy().event() == F.accounting.pure_dp_event(2.0)
    assert lgrr.privacy().epsilon_inf == 4.0
    personal = INSTANCES["JPRS/personal"]()
    assert personal.privacy([0.5, 2.0, 1.0]).event() == F.accounting.pure_dp_event(2.0)
    with pytest.raises(ValueError, match="personal budgets"):  # no budgets given: none to charge
        personal.privacy().event()


# ------------------------------------------------ simulate: the same arrays as before
@pytest.mark.parametrize("key", ["GRR", "OUE/labels", "OLH/int-labels", "GRR/personal",
                                 "AdaptiveOracle", "RAPPOR"])
def test_oracle_example_data_is_the_old_simulation_chunk(key):
    mech = INSTANCES[key]()
    for seed in (0, 1, 2):
        got = mech.example_data(1000, np.random.default_rng(seed))
        want = _old_values_chunk(mech, 1000, np.random.default_rng(seed))
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_oracle_example_data_keeps_mixed_labels_as_objects():
    mech = F.GRR(epsilon=1.0, categories=["a", 2, "c", 2**70], codebook_seed=0)
    got = mech.example_data(200, np.random.default_rng(3))
    want = _old_values_chunk(mech, 200, np.random.default_rng(3))
    assert got.dtype == object and list(got) == list(want)
    assert {type(v) for v in got} == {str, int}


@pytest.mark.parametrize("key", ["JPRS", "JPRS/personal", "PaddedRelationSampling",
                                 "PaddedRelationSampling/personal"])
def test_relation_example_data_is_the_old_simulation_chunk(key):
    mech = INSTANCES[key]()
    for seed in (0, 1):
        got = mech.example_data(500, np.random.default_rng(seed))
        want = _old_relations_chunk(mech, 500, np.random.default_rng(seed))
        for field in ("data", "indices", "indptr"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), field
        assert got.shape == want.shape


def test_the_rng_is_left_where_the_old_chunk_left_it():
    # simulate draws budgets and client coins from the same generator after the chunk
    mech = INSTANCES["GRR"]()
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    mech.example_data(300, r1)
    _old_values_chunk(mech, 300, r2)
    assert r1.random() == r2.random()
    jprs = INSTANCES["JPRS"]()
    jprs.example_data(300, r1)
    _old_relations_chunk(jprs, 300, r2)
    assert r1.random() == r2.random()


def test_simulate_writes_the_same_file_as_before(tmp_path):
    # fastldp simulate privatizes the old chunks: example_data gives the same reports
    pq = pytest.importorskip("pyarrow.parquet")
    mech = F.OLH(domain_size=30, epsilon=1.0, codebook_seed=3)
    path = mechanisms.simulate(mech, 500, tmp_path / "r.parquet", seed=11)
    # simulate: the chunk's budgets, data, then the coins, from seed=11's keyed stream
    rng = as_generator(11, purpose="simulate")
    rng.uniform(0.5, 2.0, 500)  # drawn, then replaced by the oracle's fixed epsilon
    want = mech.privatize(mech.example_data(500, rng), identities=np.arange(500, dtype=np.uint64),
                          rng=rng)
    assert np.array_equal(pq.read_table(path).column("report").to_numpy(), want)


# ------------------------------------------------ the families' own data
def test_vector_example_data_holds_1_to_m_distinct_keys_with_values_the_route_takes():
    rng = np.random.default_rng(2)
    for key in ("RPC", "Collision", "Collision/signed", "PrivKVM", "Succinct", "PCKVUE"):
        mech = INSTANCES[key]()
        x = mech.example_data(2000, rng)
        assert x.shape == (2000, mech.d) and x.has_canonical_format
        sizes = np.diff(x.indptr)
        assert sizes.min() == 1 and sizes.max() == mech.m
        values = set(np.unique(x.data).tolist())
        assert values == ({1.0} if key == "Collision" else {-1.0, 1.0}), key
    # the first key is Zipf (key 0 the most frequent; a user whose keys wrap past d - 1 has 0
    # for its smallest), and +1 is three times as likely as -1
    x = INSTANCES["RPC"]().example_data(20_000, np.random.default_rng(3))
    first = np.bincount(x.indices[x.indptr[:-1]], minlength=20)
    assert first.argmax() == 0 and np.all(np.diff(first[:5]) < 0)
    share = (x.data == 1).mean()  # binomial: sd sqrt(3/16 / nnz) < 0.003
    assert abs(share - 0.75) < 0.015


def test_heavy_hitter_example_data_are_items_of_the_protocol():
    pem = INSTANCES["PEM"]()
    items = pem.example_data(5000, np.random.default_rng(1))
    assert items.dtype == np.uint64 and items.max() < 256
    assert len(np.unique(pem.example_items())) == 256  # all 2^8 items
    values, counts = np.unique(items, return_counts=True)
    assert values[counts.argmax()] == pem.example_items()[0]  # the Zipf head
    strings = INSTANCES["PEM/bytes"]().example_data(100, np.random.default_rng(1))
    assert all(isinstance(s, bytes) and len(s) == 2 and s.isalpha() for s in strings)
    wide = F.PEM(epsilon=1.0, k=3, item_bits=64, codebook_seed=4)
    assert wide.example_items().dtype == np.uint64 and len(wide.example_items()) == 1024
    middle = F.PEM(epsilon=1.0, k=3, item_bits=40, codebook_seed=4)
    assert len(np.unique(middle.example_items())) == 1024


def test_privkvm_reports_are_stored_and_decoded_as_rows(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports

    mech = INSTANCES["PrivKVM"]()
    rng = np.random.default_rng(0)
    out = mech.privatize(mech.example_data(400, rng), rng=rng)
    rows = np.asarray(out)
    assert rows.shape == (400, 5) and rows.dtype == np.int64
    assert np.array_equal(rows[:, 0], out.keys) and np.array_equal(rows[:, 2:], out.values)
    path = write_reports(tmp_path / "kvm.parquet", mech, out, row_group_size=150)
    _same_result(decode_files(mech, path), mech.estimate(out), "PrivKVM")
    with pytest.raises(ValueError, match=r"shape \(n, 5\)"):
        mech.estimate(rows[:, :4])


def test_the_memoized_privacy_attribute_still_reads_for_one_release_with_a_warning():
    # privacy was a property holding the statement before the protocol made it a method
    for key in ("LGRR", "LongitudinalRAPPOR", "DBitFlipPM"):
        mech = INSTANCES[key]()
        statement = mech.privacy()
        with pytest.warns(DeprecationWarning, match=r"privacy is a method.*call privacy\(\)"):
            assert mech.privacy.epsilon_inf == 4.0
        with pytest.warns(DeprecationWarning):
            assert mech.privacy == statement
        with pytest.warns(DeprecationWarning):
            assert str(mech.privacy) == str(statement)
        with pytest.warns(DeprecationWarning):
            assert mech.privacy.over_time(n_values=2) == 8.0
    # the protocol's registry sees a method on the class
    assert callable(F.LGRR.privacy) and protocol._implements(F.LGRR)
