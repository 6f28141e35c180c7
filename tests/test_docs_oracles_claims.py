"""What docs/guide/oracles.rst says about bad input is what the code does (issue 37, item 6).

The guide said a bad value is "never echoed", while the error names it
("Got 7 at index 3"): the error is raised by ``privatize`` on the user's own
machine, before any report exists, and names the value, as every fastldp
check names the value given.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import fastldp

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "oracles.rst"


def test_the_guide_says_the_bad_value_is_named_as_the_error_names_it():
    text = " ".join(GUIDE.read_text().split())
    assert "never echoed" not in text
    claim = re.search(r"the message names the first bad value and its index, ``(Got [^`]+)``",
                      text)
    assert claim is not None
    for name in ("GRR", "OLH", "OUE", "HadamardResponse"):
        oracle = getattr(fastldp, name)(domain_size=5, epsilon=1.0, codebook_seed=0)
        with pytest.raises(ValueError) as err:
            oracle.privatize(np.array([0, 1, 2, 7]), rng=0)
        assert claim.group(1) in str(err.value), (name, str(err.value))
