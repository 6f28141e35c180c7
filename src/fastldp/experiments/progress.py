"""Progress bars of long runs: :func:`progress_bar` (tqdm when installed, else a plain one).

It lives in :mod:`fastldp._progress`, below the families, since report files
and the command line draw it too; this module keeps its documented path.
"""

from .._progress import progress_bar

__all__ = ["progress_bar"]
