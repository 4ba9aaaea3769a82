"""Instruments: signalling (Consistency Without Alignment), meaning (literal attraction) and
scoring (plain labelled query files). Each subpackage exports its entry points."""

__all__: list[str] = []
