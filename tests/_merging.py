"""Merge partials in the orders the split-and-merge tests exercise."""

import random

from fastldp.streaming import merge_all


def merge_in_order(server, partials, mode, seed):
    """Merge ``partials`` with ``server.merge``: ``sequential`` (a shuffled chain,
    each step in a random argument order), ``balanced`` (a balanced tree) or
    anything else (a random binary tree)."""
    rnd = random.Random(seed)
    items = list(partials)
    rnd.shuffle(items)
    if mode == "sequential":
        acc = items[0]
        for p in items[1:]:
            acc = server.merge(p, acc) if rnd.random() < 0.5 else server.merge(acc, p)
        return acc
    if mode == "balanced":
        return merge_all(items)
    while len(items) > 1:  # a random binary tree
        i, j = sorted(rnd.sample(range(len(items)), 2))
        b, a = items.pop(j), items.pop(i)
        items.append(server.merge(a, b) if rnd.random() < 0.5 else server.merge(b, a))
    return items[0]
