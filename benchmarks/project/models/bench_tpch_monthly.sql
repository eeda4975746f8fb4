-- Case tpch_compaction on parquet, partitioned by order month: a run rewrites only the months its
-- batch touches (RF1's newest month, RF2's oldest, the updated recent orders' months).
{{ config(materialized='joinery_upsert', unique_key=['o_orderkey', 'o_ordermonth'], partition_by=['o_ordermonth']) }}

{{ bench_tpch_compaction() }}
