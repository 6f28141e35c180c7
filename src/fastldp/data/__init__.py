"""Populations: synthetic generators (real-data loaders come later)."""

from .synthetic import Population, rate_diagnostic_population

__all__ = ["Population", "rate_diagnostic_population"]
