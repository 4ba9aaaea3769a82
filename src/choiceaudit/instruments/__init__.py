"""Instruments: signalling (Consistency Without Alignment) and meaning (literal attraction)."""
