"""The six frozen distributional scenarios of paper 000, Table 2.

Every scenario draws ``n`` holders over a ``d1 x d2`` domain with a nominal
support of ``s`` pairs. Each holder's set is a *successive* weighted sample
without replacement from the support (draw a pair with probability
proportional to its weight, remove it, repeat), which is also what
``Generator.choice(p=w, replace=False)`` draws. It is vectorized with
exponential keys: the first ``m`` pairs in increasing order of ``E_j / w_j``,
``E_j ~ Exp(1)``, are a successive sample of size ``m``.

======================  ===================================================
scenario                generating feature
======================  ===================================================
``flat``                uniform weights on a uniformly random support
``zipf``                weight ``r**-1.2`` for the pair of random rank ``r``
``community``           four diagonal bipartite blocks: rows and columns are
                        split into four groups, block ``b`` holds ``s / 4``
                        random support pairs of (row group b) x (col group
                        b); each holder belongs to one uniformly drawn block
                        and samples uniformly inside it
``hub-tail``            a random half of the support (the hubs) carries 80%
                        of the weight, the other half (the tail) 20%
``user-mixture``        a latent 70/30 holder mixture of two weightings:
                        70% of holders use the hub-tail weighting, 30% the
                        mirrored one (hubs and tail swapped)
``variable-size``       Zipf weights ``r**-0.8`` and ``|E_i|`` drawn from a
                        Poisson(4.06) truncated to ``{1, ..., k}`` (mean
                        4.00 at ``k = 8``)
======================  ===================================================

All other scenarios give every holder exactly ``k`` pairs. The population
target is the exact mean of the ``n`` stored records,
``M_pop(e) = #{i : e in E_i} / n``, and ``approximation`` is its best
``s``-sparse approximation (here ``M_pop`` has at most ``s`` non-zeros, so
the approximation tail is 0).

Frozen populations: with the defaults ``n = 16,000``, ``d1 = d2 = 64``,
``s = 128``, ``k = 8`` and seeds 0-4, the 30 populations are a deterministic
function of ``(scenario, seed)``: the generator is
``numpy.random.default_rng(SeedSequence(seed, spawn_key=(id,)))`` with the
fixed scenario ids of :data:`SCENARIO_IDS`, and only ``Generator.random``
is drawn from it. Their content hashes (:func:`population_content_hash`)
are recorded in :data:`FROZEN_HASHES`; a test regenerates all 30 and
compares.

Differences from the paper's Table 2 (the paper does not give every
generating parameter; see :data:`PAPER_TABLE2` and
:func:`table2_statistics`):

* ``user-mixture``: the paper names "a 70/30 latent holder mixture" without
  its two weightings. The mirrored hub-tail pair used here gives a top-10
  mass of about 0.80 (seeds 0-4: 0.794-0.813) against the paper's 0.858.
  No 70/30 mixture of two of the other Table 2 weightings matches it either
  (flat/hub-tail 0.77, hub-tail/flat 0.91, flat/Zipf 1.73, Zipf/flat 3.19).
* ``variable-size``: the paper says "Zipf weights" without an exponent.
  With exponent 1.2 and mean ``|E_i| = 4`` the top-10 mass would be about
  2.36; exponent 0.8 gives about 1.52, matching the paper's 1.516, so 0.8 is
  used. The Poisson parameter 4.06 makes the truncated mean 4.00 (paper:
  3.99 for its representative seed; seeds 0-4 give 3.98-4.00).
* ``flat``, ``zipf``, ``community``, ``hub-tail``: mean ``|E_i|`` 8.00 and
  target nnz 128 as in the paper; the top-10 masses of seeds 0-4 average
  within 0.01 of the paper's (0.659, 4.283, 0.661, 1.032 against 0.662,
  4.274, 0.657, 1.029), and the paper's value lies inside the 99% prediction
  interval of the five seeds (tested).

References
----------
Paper 000, section 7.1 and Table 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_int, param_error
from .populations import Population, population_from_csr

__all__ = [
    "SCENARIOS",
    "SCENARIO_IDS",
    "FROZEN_SEEDS",
    "FROZEN_HASHES",
    "PAPER_TABLE2",
    "scenario_population",
    "frozen_populations",
    "population_statistics",
    "table2_statistics",
    "format_table2",
    "export_frozen",
    "load_frozen",
]

SCENARIOS = ("flat", "zipf", "community", "hub-tail", "user-mixture", "variable-size")

#: Fixed spawn keys of the scenarios; never renumber (the frozen hashes depend on them).
SCENARIO_IDS = {
    "flat": 1, "zipf": 2, "community": 3, "hub-tail": 4, "user-mixture": 5, "variable-size": 6,
}

FROZEN_SEEDS = (0, 1, 2, 3, 4)

#: Defaults of section 7.1: n, (d1, d2), nominal s, cap k.
DEFAULTS = {"n": 16_000, "shape": (64, 64), "s": 128, "k": 8}

ZIPF_EXPONENT = 1.2
VARIABLE_ZIPF_EXPONENT = 0.8
VARIABLE_POISSON_LAMBDA = 4.06
HUB_SHARE = 0.8
MIXTURE_SHARE = 0.7
COMMUNITIES = 4

FEATURES = {
    "flat": "Uniform weights; random support",
    "zipf": "Zipf weights (exponent 1.2)",
    "community": "Four diagonal bipartite blocks",
    "hub-tail": "80/20 mass on hub/tail halves",
    "user-mixture": "70/30 latent holder mixture",
    "variable-size": "Zipf weights; truncated-Poisson |Ei|",
}

#: Paper 000, Table 2 (one representative seed): mean ``|E_i|``, target nnz, top-10 mass.
PAPER_TABLE2 = {
    "flat": (8.00, 128, 0.662),
    "zipf": (8.00, 128, 4.274),
    "community": (8.00, 128, 0.657),
    "hub-tail": (8.00, 128, 1.029),
    "user-mixture": (8.00, 128, 0.858),
    "variable-size": (3.99, 128, 1.516),
}

#: sha256 content hashes of the 30 frozen populations (defaults, seeds 0-4).
FROZEN_HASHES = {
    ("flat", 0): "0cf1cc6d92c0e6cefa96ecc6edf06845eb254fbea4083f63d2bc720ca9de26d6",
    ("flat", 1): "dfe9b49c7fc5ce2b5fb5d6ab4c23543f183f3148a1a5cdfd9161e953539bf4d9",
    ("flat", 2): "0724c78041e3f90abcf7534230263aa46d869321ceede72e5059278ab6ca5fb6",
    ("flat", 3): "ad89b20b961418a916d4355eae2ab6fd21e14703549582411131960a74f9ceaa",
    ("flat", 4): "0e0719d58faa31030c8de926d5be73b421a406badb7be332d9e88fc692e6a7ca",
    ("zipf", 0): "77bef55b56ada095999940813c4302e495b8364fa60a117cd68d320c6d33e90b",
    ("zipf", 1): "15a211334cdc67cbef5c56c134d4cd208f292142df889c7cdfe8a8c5f7a2fd1b",
    ("zipf", 2): "7c7778389420d79305427dfbad32fc7df09fc7c32a223cd52f5e51da78353e8c",
    ("zipf", 3): "f046cf7d319052b4b56c44908b65bf8e02c5ee15b23ba7799cfa02ab3333978a",
    ("zipf", 4): "3a96d86a2a4594298171ed4748a59e3d8dbe1ac70678f3ac9f95e438e8f72ac4",
    ("community", 0): "a35af9d41be585ba671415f145e3a40ccc2d4b533c5fb4ae8ec8b28211c90b3e",
    ("community", 1): "b8f4a55a7d6b73c8e914909456eac99674a2a507c35e53d17b1b8b4b2434c9bf",
    ("community", 2): "cf79d3a3ce830868a55f26113ffb19d8552ccff95be72dbb38c1069108033b30",
    ("community", 3): "72336f8227c783b311a896c6b4954f2342b17950e747ddd9600f38bca29394ce",
    ("community", 4): "1d15e5067614b2aafea0714fb3361133828dd9f8baf46038ea51c290457d3283",
    ("hub-tail", 0): "6e5c16b33a2e8e44537562d4807b214811edb3e08ab02efb0d5e6deadfc7a7fe",
    ("hub-tail", 1): "0a32fc9893d230c365eb6d8c5a0bf31d3f3367c7c3deb991361d2fe768f0a364",
    ("hub-tail", 2): "b3b4c9c8f329df7f7a8cff2d1cfb04f508c146088dec51de806c984f5a558ce4",
    ("hub-tail", 3): "b02d47e8ad2f148221717536aa3c8c9930bd976b67186516811ac0beca46c937",
    ("hub-tail", 4): "9a52d34104f1a8e25e0b9d49e21a7f13dffcfcbd4817baf3248bc52aeed9623b",
    ("user-mixture", 0): "0dc8403ee3f281ac648ea861667260af7a926f821a1f3cd549a41adef4a136c4",
    ("user-mixture", 1): "8e1a49b9e60befb6a6b3a97966da7c96dad402ce193b3519bac7adbedae837bd",
    ("user-mixture", 2): "f63a0103ddef2f4e71fd2ca0c9adff43061a9ddaadb76aba9b8f6b78132df261",
    ("user-mixture", 3): "bb1277fc10281b29abd4514b257d40b7e201bcc17f0c35879afe40b611cfd386",
    ("user-mixture", 4): "30bc89e1c7beb348f9ce5ea573cffe6d8f620de6fa0b59abce21e9a7b1ad0550",
    ("variable-size", 0): "870533723d52e5c351aa0c17c55ea98c9d091e36f30f87d5f2365527a681dc0f",
    ("variable-size", 1): "cdc1439b868d6e17c9c352d636376a9499dc0482ee971d106ebe633c27c3859a",
    ("variable-size", 2): "0fd265a792440dd3050c65c2ed36c9cff409700743014ffa706e3f370bf44299",
    ("variable-size", 3): "5def6a1d720a8b3247b8a9acac7edc8d0d3518b3d5d506ce2b1d8d25ad4377db",
    ("variable-size", 4): "e56bb46519cf0aac5904038d811c200e0e185a429139386179654136274a73c6",
}


def _scenario_generator(name: str, seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SCENARIO_IDS[name],)))


def _random_subset(gen, size: int, m: int) -> np.ndarray:
    """``m`` distinct indices of ``range(size)`` in uniformly random order."""
    return np.argsort(gen.random(size), kind="stable")[:m]


def _successive_samples(gen, weights: np.ndarray, k: int) -> np.ndarray:
    """Row ``i``: the first ``k`` columns of a successive sample with weights ``weights[i]``.

    ``weights`` has shape (n, m); zero weights are never drawn. Returns the
    (n, k) column indices in draw order.
    """
    n, m = weights.shape
    expo = -np.log1p(-gen.random((n, m)))
    keys = np.full((n, m), np.inf)
    np.divide(expo, weights, out=keys, where=weights > 0)
    first = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < m else np.tile(np.arange(m), (n, 1))
    order = np.argsort(np.take_along_axis(keys, first, axis=1), axis=1, kind="stable")
    return np.take_along_axis(first, order, axis=1)


def _truncated_poisson_sizes(gen, n: int, lam: float, k: int) -> np.ndarray:
    sizes = np.arange(1, k + 1)
    logw = sizes * np.log(lam) - np.cumsum(np.log(sizes))
    pmf = np.exp(logw - logw.max())
    cdf = np.cumsum(pmf / pmf.sum())
    cdf[-1] = 1.0
    return sizes[np.searchsorted(cdf, gen.random(n), side="right")]


def _zipf(s: int, exponent: float) -> np.ndarray:
    return np.arange(1, s + 1, dtype=np.float64) ** -exponent


def _hub_tail(s: int) -> np.ndarray:
    hubs = s // 2
    w = np.empty(s)
    w[:hubs] = HUB_SHARE / hubs
    w[hubs:] = (1.0 - HUB_SHARE) / (s - hubs)
    return w


def _check_shape(shape, owner):
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2):
        raise param_error("shape", owner, "a pair (d1, d2) of ints >= 1", shape, TypeError)
    return check_int(shape[0], "shape[0]", owner, low=1), check_int(shape[1], "shape[1]", owner, low=1)


def scenario_population(
    name: str, *, seed: int = 0, n: int = 16_000, shape=(64, 64), s: int = 128, k: int = 8
) -> Population:
    """Generate one Table 2 scenario population.

    Parameters
    ----------
    name : {"flat", "zipf", "community", "hub-tail", "user-mixture", "variable-size"}
    seed : int
        Non-negative; with the default ``n, shape, s, k`` seeds 0-4 give the
        frozen populations whose hashes are in :data:`FROZEN_HASHES`.
    n : int
        Holders.
    shape : tuple (d1, d2)
        Domain; ``community`` needs ``d1, d2 >= 4``.
    s : int
        Nominal support size, ``k <= s <= d1 * d2`` (``community``: every
        block must hold ``s / 4`` pairs and at least ``k``).
    k : int
        Set size (the cap for ``variable-size``).

    Returns
    -------
    Population
        ``target`` is the exact mean of the stored records; ``metadata``
        holds the scenario, seed and its Table 2 statistics.

    References
    ----------
    Paper 000, section 7.1, Table 2.
    """
    owner = "scenario_population"
    check_choice(name, "name", owner, SCENARIOS)
    seed = check_int(seed, "seed", owner, low=0)
    n = check_int(n, "n", owner, low=1)
    d1, d2 = _check_shape(shape, owner)
    p = d1 * d2
    k = check_int(k, "k", owner, low=1)
    s = check_int(s, "s", owner, low=k, high=p)
    gen = _scenario_generator(name, seed)

    if name == "community":
        if d1 < COMMUNITIES or d2 < COMMUNITIES:
            raise param_error("shape", owner, f"a pair (d1, d2) with d1, d2 >= {COMMUNITIES}", shape)
        row_groups = np.array_split(np.arange(d1), COMMUNITIES)
        col_groups = np.array_split(np.arange(d2), COMMUNITIES)
        per_block = [s // COMMUNITIES + (b < s % COMMUNITIES) for b in range(COMMUNITIES)]
        cells = [(r[:, None] * d2 + c[None, :]).ravel() for r, c in zip(row_groups, col_groups)]
        if min(per_block) < k or any(m > c.shape[0] for m, c in zip(per_block, cells)):
            raise param_error(
                "s", owner,
                f"an int with k <= s / {COMMUNITIES} <= (d1 / {COMMUNITIES}) * (d2 / {COMMUNITIES})", s,
            )
        width = max(per_block)
        supports = np.zeros((COMMUNITIES, width), dtype=np.int64)
        table = np.zeros((COMMUNITIES, width))
        for b in range(COMMUNITIES):
            supports[b, : per_block[b]] = cells[b][_random_subset(gen, cells[b].shape[0], per_block[b])]
            table[b, : per_block[b]] = 1.0
        group = np.minimum((gen.random(n) * COMMUNITIES).astype(np.int64), COMMUNITIES - 1)
    else:
        support = _random_subset(gen, p, s)  # support[j] has weight rank j + 1
        if name == "flat":
            table = np.ones((1, s))
        elif name == "zipf":
            table = _zipf(s, ZIPF_EXPONENT)[None, :]
        elif name == "variable-size":
            table = _zipf(s, VARIABLE_ZIPF_EXPONENT)[None, :]
        elif name == "hub-tail":
            table = _hub_tail(s)[None, :]
        else:  # user-mixture: the mirrored weighting swaps hubs and tail
            w = _hub_tail(s)
            table = np.stack([w, np.concatenate([w[s // 2:], w[: s // 2]])])
        supports = np.tile(support, (table.shape[0], 1))
        if name == "user-mixture":
            group = (gen.random(n) >= MIXTURE_SHARE).astype(np.int64)
        else:
            group = np.zeros(n, dtype=np.int64)

    if name == "variable-size":
        sizes = _truncated_poisson_sizes(gen, n, VARIABLE_POISSON_LAMBDA, k)
    else:
        sizes = np.full(n, k, dtype=np.int64)
    drawn = _successive_samples(gen, table[group], k)
    pairs = np.take_along_axis(supports[group], drawn, axis=1)
    pairs[np.arange(k)[None, :] >= sizes[:, None]] = p  # sentinel sorts last
    pairs.sort(axis=1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    pop = population_from_csr(
        indptr, pairs[pairs < p], shape=(d1, d2), k=k, s=s, name=name,
        metadata={"scenario": name, "seed": seed, "feature": FEATURES[name]},
    )
    pop.metadata.update(population_statistics(pop))
    return pop


def population_statistics(pop: Population) -> dict:
    """Table 2 statistics of a population: mean ``|E_i|``, target nnz, top-10 mass.

    ``top10_mass`` is the sum of the 10 largest entries of the target;
    ``approximation_tail`` is ``||M_pop - M_pop^(s)||_F^2``.
    """
    flat = pop.target.ravel()
    top = np.sort(flat)[-10:]
    return {
        "n": pop.n,
        "mean_set_size": float(pop.set_sizes.mean()) if pop.n else 0.0,
        "target_nnz": int(np.count_nonzero(flat)),
        "top10_mass": float(top.sum()),
        "approximation_tail": pop.approximation_tail if pop.approximation is not None else None,
    }


def frozen_populations(scenarios=SCENARIOS, seeds=FROZEN_SEEDS):
    """Yield the frozen populations ``(scenario, seed, Population)`` in a fixed order."""
    for name in scenarios:
        check_choice(name, "scenarios", "frozen_populations", SCENARIOS)
        for seed in seeds:
            yield name, seed, scenario_population(name, seed=seed)


def table2_statistics(seeds=(0,)) -> list:
    """Return Table 2 rows computed from the frozen populations.

    One row per scenario and seed: ``scenario``, ``seed``, ``feature``,
    ``mean_set_size``, ``target_nnz``, ``top10_mass`` and the paper's values
    ``paper_mean_set_size``, ``paper_target_nnz``, ``paper_top10_mass``
    (paper 000, Table 2, one representative seed). See the module docstring
    for where and why the generators differ from the paper.
    """
    rows = []
    for name, seed, pop in frozen_populations(SCENARIOS, seeds):
        stats = population_statistics(pop)
        paper = PAPER_TABLE2[name]
        rows.append({
            "scenario": name, "seed": seed, "feature": FEATURES[name],
            "mean_set_size": stats["mean_set_size"], "target_nnz": stats["target_nnz"],
            "top10_mass": stats["top10_mass"],
            "paper_mean_set_size": paper[0], "paper_target_nnz": paper[1], "paper_top10_mass": paper[2],
        })
    return rows


def format_table2(rows=None) -> str:
    """Return Table 2 as aligned text (rows from :func:`table2_statistics`)."""
    rows = table2_statistics() if rows is None else rows
    head = (f"{'scenario':<14} {'seed':>4} {'feature':<37} {'mean|Ei|':>8} {'(paper)':>7} "
            f"{'nnz':>5} {'(paper)':>7} {'top-10':>7} {'(paper)':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['scenario']:<14} {r['seed']:>4} {r['feature']:<37} {r['mean_set_size']:>8.2f} "
            f"{r['paper_mean_set_size']:>7.2f} {r['target_nnz']:>5d} {r['paper_target_nnz']:>7d} "
            f"{r['top10_mass']:>7.3f} {r['paper_top10_mass']:>7.3f}"
        )
    return "\n".join(lines)


def _file_name(name: str, seed: int) -> str:
    return f"{name}-seed{seed}.npz"


def export_frozen(directory, *, scenarios=SCENARIOS, seeds=FROZEN_SEEDS, verify: bool = True) -> Path:
    """Write the frozen populations and a manifest into ``directory``.

    Each population goes to ``<scenario>-seed<seed>.npz`` with arrays
    ``indptr`` and ``indices`` (int64 CSR of the relation sets, pairs encoded
    ``row * d2 + col``), ``shape``, ``k``, ``s``, ``target`` (``M_pop``) and
    ``approximation`` (``M_pop^(s)``). ``manifest.json`` lists every file with
    its content hash, statistics and the encoding the hash is taken over.

    Parameters
    ----------
    directory : str or Path
        Created if missing; existing files of the same names are replaced.
    scenarios, seeds
        Which populations (default: all 30).
    verify : bool
        Check each default-parameter population against :data:`FROZEN_HASHES`
        before writing it (a mismatch raises ``RuntimeError``).

    Returns
    -------
    Path
        The manifest.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, seed, pop in frozen_populations(scenarios, seeds):
        digest = pop.content_hash
        expected = FROZEN_HASHES.get((name, seed))
        if verify and expected is not None and digest != expected:
            raise RuntimeError(
                f"Frozen population {name} seed {seed} hashes to {digest}, "
                f"but {expected} is recorded: the generator has drifted."
            )
        fname = _file_name(name, seed)
        with open(out / fname, "wb") as fh:
            np.savez_compressed(
                fh, indptr=pop.relations.indptr.astype(np.int64),
                indices=pop.relations.indices.astype(np.int64), shape=np.array(pop.shape, dtype=np.int64),
                k=np.int64(pop.k), s=np.int64(pop.s), target=pop.target, approximation=pop.approximation,
            )
        entries.append({"scenario": name, "seed": seed, "file": fname, "content_hash": digest,
                        **population_statistics(pop)})
    manifest = {
        "format": "fastldp.frozen.v1",
        "hash": "sha256 of fastldp.relations.population_content_hash's canonical encoding "
                "(version line, name, int64 LE d1 d2 k s n nnz, indptr, indices)",
        "defaults": {"n": DEFAULTS["n"], "shape": list(DEFAULTS["shape"]), "s": DEFAULTS["s"],
                     "k": DEFAULTS["k"]},
        "populations": entries,
    }
    path = out / "manifest.json"
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)
    return path


def load_frozen(file, *, name=None) -> Population:
    """Read a population written by :func:`export_frozen` (``name`` defaults to the file's scenario)."""
    file = Path(file)
    if name is None:
        name = file.name.split("-seed")[0]
    with np.load(file) as z:
        shape = tuple(int(x) for x in z["shape"])
        return population_from_csr(
            z["indptr"], z["indices"], shape=shape, k=int(z["k"]), s=int(z["s"]), name=name,
            metadata={"file": str(file)},
        )
