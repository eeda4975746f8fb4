-- Case tpch_compaction, the plain baseline: the same compaction as bench_tpch_compacted, rebuilt by
-- dbt-spark's own `table` on every run.
{{ config(materialized='table') }}

{{ bench_tpch_compaction() }}
