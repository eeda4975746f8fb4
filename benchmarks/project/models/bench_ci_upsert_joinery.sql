-- Case compaction_incremental (delta): joinery_upsert's MERGE fed the same changed rows as
-- bench_ci_upsert_dbt (the latest batch, one row per key, no deletes), into a copy of the snapshot.
{{ config(materialized='joinery_upsert', unique_key=['id', 'part'], partition_by=['part']) }}

{{ bench_upsert_input('ci_snapshot', 'ci_changes', joinery.is_incremental()) }}
