"""Exact and empirical privacy audits of every channel the package releases.

The audit is a runner: each family describes its randomizers beside its
mechanisms (a ``_channels.py`` module with the exact laws, samplers, draws
and negative controls, e.g. :mod:`fastldp.oracles._channels`), its classes
answer ``channels(epsilon)`` (:class:`fastldp.protocol.Audited`, the types in
:mod:`fastldp.channels`), and this room finds them through
:func:`fastldp.protocol.audited_classes` and runs them. It keeps the shared
machinery:

- :mod:`.exact` - the largest likelihood ratio of a finite channel in
  rational arithmetic, compared with ``e^eps`` at the edge;
- :mod:`.empirical` - distinguishing tests with Clopper-Pearson intervals:
  lower bounds on ``eps`` (and on zCDP's ``rho``);
- :mod:`.conformance` - how the conformance tests of a protocol's view (noise
  law, uniform shares, uniform shuffler) are decided: p-values at a
  Bonferroni level;
- :mod:`.registry` - every channel with its claimed budget and its audit;
  :func:`audit_all` runs them (``fastldp audit`` on the command line), and
  every row says the smallest fault it detects (its *reach*);
- :mod:`.discovery` - the channels of every audited class;
- :mod:`.controls` - the negative controls: a law fault planted in every
  channel, and the families' own faulty copies;
- :mod:`.mironov` - Mironov's attack on textbook floating-point Laplace noise
  (a demonstration, and the control ``control:laplace-textbook-lsb``);
- :mod:`.report` - the table.

This room sits on top of the families (like the CLI) and names none of
them: no family imports it.

Examples
--------
Audit two oracles and their negative controls (under-noised copies, which
the audit must catch); ``fastldp audit grr oue --controls`` prints the same
table:

>>> from fastldp.audit import audit_all, channels, format_table
>>> "grr" in channels() and "u2r-fit" in channels()
True
>>> rows = audit_all(["grr", "oue"], n=2_000, controls=True)
>>> [(row.name, row.holds, row.as_expected) for row in rows]  # doctest: +NORMALIZE_WHITESPACE
[('grr', True, True), ('oue', True, True), ('control:grr@1.5eps', False, True),
 ('control:oue@1.5eps', False, True), ('control:grr-sampler', False, True)]
>>> print(format_table(rows[:1]))  # doctest: +ELLIPSIS
mechanism  claim  exact eps  empirical lb  detects  verdict  seconds
---------  -----  ---------  ------------  -------  -------  -------
grr        eps=1  1.000000   0.653288      any      pass     ...

Floating-point side channels
----------------------------
The continuous randomizers (:class:`~fastldp.oracles.Laplace`,
:class:`~fastldp.oracles.Piecewise`, and RPC over them) draw IEEE-754 doubles
through numpy. Their guarantee is the guarantee of the ideal real-valued
mechanism: as Mironov (CCS 2012) showed for the textbook floating-point
Laplace, the set of doubles a release can take depends on the input, and
an observer of the exact bits can rule inputs out (``tests/test_audit_hygiene.py``
demonstrates it on :class:`~fastldp.oracles.Laplace`). The package does not
claim resistance to that attack for continuous randomizers. Deployments that
need it should use a randomizer with a finite output space - Duchi (RPC's
default), the frequency oracles, JPRS - whose every output is one of a few
fixed values and whose float probabilities are audited exactly here, or the
grid options: ``Laplace(secure=True)``, :class:`~fastldp.oracles.DiscretePiecewise`
and :class:`~fastldp.oracles.DiscreteSHE`, whose noise comes from the exact
samplers of :mod:`fastldp.noise` (:mod:`.mironov` runs the attack on both
kinds; the user guide's "Floating point" page lists every randomizer).

References
----------
.. [1] I. Mironov, "On significance of the least significant bits for
   differential privacy", CCS 2012.
"""

from .controls import negative_controls
from .empirical import (
    EmpiricalAudit,
    clopper_pearson,
    epsilon_lower_bound,
    event_test,
    threshold_test,
    zcdp_lower_bound,
)
from .exact import ExactAudit, ExactLaw, audit_law
from .conformance import Check
from .registry import (LOW_POWER, AuditRow, Channel, audit_all, audit_channel, channels,
                       get_channel)
from .report import format_table

__all__ = [
    "AuditRow", "Channel", "Check", "EmpiricalAudit", "ExactAudit", "ExactLaw", "LOW_POWER",
    "audit_all",
    "audit_channel", "audit_law", "channels", "clopper_pearson", "epsilon_lower_bound",
    "event_test", "format_table", "get_channel", "negative_controls", "threshold_test",
    "zcdp_lower_bound",
]
