"""nmp: near-memory-processing hardware modeling and co-design kit for DLRM embeddings."""

__version__ = "0.1.0"
