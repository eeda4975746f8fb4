{#- The joinery calls that several benchmark models share, so that the variants of one case
    (joinery_upsert incremental, joinery_upsert full refresh, dbt-spark's `table`) differ only in
    their config. -#}

{% macro bench_changelog_state(log, key) %}
    {#- A KTable of the fk_join case: the latest version of each key of changelog `log` (of this run's
        width). -#}
    {{ return(joinery.changelog_state(
        bench_source(log),
        key=key,
        sequence_by='seq',
        deleted="op = 'd'",
        loaded_at='batch_id'
    )) }}
{% endmacro %}


{% macro bench_orders_with_customer(prefix) %}
    {#- The fk_join case's join of the KTables `<prefix>_orders_state` and `<prefix>_customers_state`:
        the order's customer and amount (narrow), or every column of the order (wide). -#}
    {% set wide = var('bench_width', 'narrow') != 'narrow' %}
    {{ return(joinery.fk_join(
        left=ref(prefix ~ '_orders_state'),
        right=ref(prefix ~ '_customers_state'),
        left_key='order_id',
        foreign_key='customer_id',
        right_key='customer_id',
        join_type='inner',
        left_columns=none if wide else ['customer_id', 'amount'],
        right_columns=['customer_name']
    )) }}
{% endmacro %}


{% macro bench_partitioned_compaction(delta='ci_delta') %}
    {#- The compaction_incremental case: the snapshot and its delta batches (`delta`: ci_delta, whose
        batches each fall in one partition, or ci_delta_spread, spread over all), compacted. -#}
    {{ return(joinery.compact(
        snapshot=bench_source('ci_snapshot'),
        deltas=[bench_source(delta)],
        key='id',
        updated_at='ts',
        loaded_at='loaded_at'
    )) }}
{% endmacro %}


{% macro bench_tpch_compaction() %}
    {#- The tpch_compaction case: TPC-H's orders snapshot and its refresh batches, compacted. -#}
    {{ return(joinery.compact(
        snapshot=source('bench', 'tpch_snapshot'),
        deltas=[source('bench', 'tpch_deltas')],
        key='o_orderkey',
        updated_at='o_updated_at',
        deleted='is_deleted',
        loaded_at='loaded_at'
    )) }}
{% endmacro %}
