-- Case tpch_compaction: TPC-H's orders compacted from a snapshot and the refresh batches (RF1 new
-- orders, RF2 deletes, updates of recent orders), each run applying the batches loaded since the last.
{{ config(materialized='joinery_upsert', unique_key='o_orderkey') }}

{{ bench_tpch_compaction() }}
