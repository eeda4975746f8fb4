-- Case tpch_compaction, the plain baseline of bench_tpch_monthly: dbt-spark's `table`, partitioned by
-- order month too.
{{ config(materialized='table', partition_by=['o_ordermonth']) }}

{{ bench_tpch_compaction() }}
