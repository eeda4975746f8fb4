-- Case compaction_incremental (delta): joinery_upsert's MERGE fed the same changed rows as
-- bench_ci_upsert_dbt (the latest batch, one row per key, no deletes), into a copy of the snapshot.
-- Its full-build SQL is the snapshot, not the state the changes lead to, so it never rebuilds.
{{ config(materialized='joinery_upsert', rebuild_threshold='always_incremental', unique_key=['id', 'part'],
    partition_by=['part']) }}

{{ bench_upsert_input('ci_snapshot', 'ci_changes', joinery.is_incremental()) }}
