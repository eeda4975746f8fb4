{#- The joinery calls that several benchmark models share, so that the variants of one case
    (joinery_upsert incremental, joinery_upsert full refresh, dbt-spark's `table`) differ only in
    their config. -#}

{% macro bench_changelog_state(log, key) %}
    {#- A KTable of the fk_join case: the latest version of each key of changelog `log`. -#}
    {{ return(joinery.changelog_state(
        source('bench', log),
        key=key,
        sequence_by='seq',
        deleted="op = 'd'",
        loaded_at='batch_id'
    )) }}
{% endmacro %}


{% macro bench_orders_with_customer(prefix) %}
    {#- The fk_join case's join of the KTables `<prefix>_orders_state` and `<prefix>_customers_state`. -#}
    {{ return(joinery.fk_join(
        left=ref(prefix ~ '_orders_state'),
        right=ref(prefix ~ '_customers_state'),
        left_key='order_id',
        foreign_key='customer_id',
        right_key='customer_id',
        join_type='inner',
        left_columns=['customer_id', 'amount'],
        right_columns=['customer_name']
    )) }}
{% endmacro %}


{% macro bench_partitioned_compaction() %}
    {#- The compaction_incremental case: the snapshot and its delta batches, compacted. -#}
    {{ return(joinery.compact(
        snapshot=source('bench', 'ci_snapshot'),
        deltas=[source('bench', 'ci_delta')],
        key='id',
        updated_at='ts',
        loaded_at='loaded_at'
    )) }}
{% endmacro %}
