"""The benchmark cases, in the order of the benchmarks issue; each module documents its variants."""

from __future__ import annotations

from benchmarks.cases import (
    collect_join,
    compaction_full,
    compaction_incremental,
    demo,
    fk_join,
    fk_join_feed,
    maintain,
    multi_join,
    plain_dbt,
    router,
    tpch_compaction,
    tpch_fk_feed,
)

CASES = {
    case.NAME: case
    for case in [
        compaction_full,
        compaction_incremental,
        fk_join,
        fk_join_feed,
        plain_dbt,
        multi_join,
        collect_join,
        router,
        maintain,
        tpch_compaction,
        tpch_fk_feed,
        demo,
    ]
}
