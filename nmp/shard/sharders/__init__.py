"""The sharders; importing this package registers each one (order = CLI order)."""

from nmp.shard.sharders import lookup, recshard, size, size_lookup  # noqa: F401
