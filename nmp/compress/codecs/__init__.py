"""Codec variants, one module each; importing this package registers them all."""

from nmp.compress.codecs import hybrid, lossless, quant, raw, vector_lz  # noqa: F401
