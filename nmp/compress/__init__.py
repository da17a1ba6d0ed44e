"""nmp.compress: error-bounded lossy and lossless codecs for the embedding all-to-all (SC'24).

Codecs (one module each under ``codecs/``, registered by name) work on float32 chunks
``[vectors, dim]`` of one table; :mod:`nmp.compress.network` models the all-to-all's time and
:mod:`nmp.compress.speedup` the step time with and without compression.
"""

from nmp.compress.codec import Codec, Encoded, codec_names, make_codec
from nmp.compress.measure import measure

__all__ = ["Codec", "Encoded", "codec_names", "make_codec", "measure"]
