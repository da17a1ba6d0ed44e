"""The sharders, one module each; :data:`nmp.shard.registry.SHARDERS` lists and loads them."""
