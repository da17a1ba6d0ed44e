"""nmp.workload: DLRM embedding workloads, lookup batches (EmbeddingBag CSR), access statistics.

Imports only numpy, ``nmp.config``/``nmp.errors``/``nmp.units``/``nmp.registry``; the access
distributions are the modules of :mod:`nmp.workload.distributions`.
"""

from nmp.workload.batch import (
    LookupBatch,
    TableLookups,
    draw_rows,
    generate_batch,
    generate_batches,
    generate_table,
)
from nmp.workload.elements import ELEMENT_FORMATS, ElementFormat, element_bytes, element_format
from nmp.workload.indexfile import load_index_file, save_index_file
from nmp.workload.ranked import ranked_rows
from nmp.workload.spec import (
    REUSE_LEVELS,
    PoolingSpec,
    TableSpec,
    WorkloadSpec,
    catalog_rows,
    load_workload,
    workload_from_mapping,
)
from nmp.workload.stats import AccessStats, access_stats

__all__ = [
    "ELEMENT_FORMATS",
    "REUSE_LEVELS",
    "AccessStats",
    "ElementFormat",
    "LookupBatch",
    "PoolingSpec",
    "TableLookups",
    "TableSpec",
    "WorkloadSpec",
    "access_stats",
    "catalog_rows",
    "draw_rows",
    "element_bytes",
    "element_format",
    "generate_batch",
    "generate_batches",
    "generate_table",
    "load_index_file",
    "load_workload",
    "ranked_rows",
    "save_index_file",
    "workload_from_mapping",
]
