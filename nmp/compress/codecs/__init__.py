"""Codec variants, one module each; :data:`nmp.compress.codec.CODECS` lists and loads them."""
