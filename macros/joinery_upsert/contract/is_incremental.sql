{#- What model authors call in a joinery_upsert model: whether this run is incremental, and the
    watermark of rows already applied (data in the table, so it commits with the rows). -#}

{% macro is_incremental() %}
    {{ return(adapter.dispatch('is_incremental', 'joinery')()) }}
{% endmacro %}

{% macro default__is_incremental() %}
    {#- True when this run applies changes to the model's existing table, so its SELECT yields only
        changed rows; false on a first build, a --full-refresh, for a table joinery cannot merge into
        (another format, one it did not build), and when the run rebuilds because rebuilding costs
        less (config rebuild_threshold). The one decision is joinery._upsert_build_mode, made while the
        model compiles; on delta and iceberg, with the cost rule on, it reads the table's history. -#}
    {{ return(not joinery._upsert_build_mode().full) }}
{% endmacro %}


{% macro previous_max(column, default=none) %}
    {{ return(adapter.dispatch('previous_max', 'joinery')(column, default)) }}
{% endmacro %}

{% macro default__previous_max(column, default=none) %}
    {#- The watermark: `(select coalesce(max(column), default) from this)` on an incremental run,
        else `default` (NULL when none). `column` is a column of this model's table; `default` a
        SQL literal such as "timestamp'1900-01-01 00:00:00'". -#}
    {% do joinery._validate_identifier(column, 'column', 'previous_max') %}
    {% set fallback = joinery._sql_expression(default) if default is not none else 'null' %}
    {% if not joinery.is_incremental() %}
        {{ return('(' ~ fallback ~ ')') }}
    {% endif %}
    {{ return(joinery._watermark_subquery(column, fallback)) }}
{% endmacro %}


{% macro _watermark_subquery(column, fallback) %}
    {#- `(select coalesce(max(column), fallback) from this)`, for callers that already know the run
        is incremental. The column is qualified: a correlated name would read the enclosing query's
        column of that name, were the table to lack it. -#}
    {{ return('(select coalesce(max(applied.' ~ joinery._quote_identifier(column) ~ '), ' ~ fallback ~ ') from '
        ~ this ~ ' as applied)') }}
{% endmacro %}


{% macro new_rows_filter(source_column, column=none) %}
    {{ return(adapter.dispatch('new_rows_filter', 'joinery')(source_column, column)) }}
{% endmacro %}

{% macro default__new_rows_filter(source_column, column=none) %}
    {#- A WHERE condition keeping source rows that arrived after the last applied batch:
        `source_column > (select max(column) from this)` on an incremental run (true while the table
        is empty), `true` otherwise. `source_column` is a SQL expression over the source (e.g.
        `deltas.loaded_at`); `column` the table's column holding it (default: the expression's last
        name part). -#}
    {% set stored = column if column is not none else (source_column | string).split('.')[-1] | replace('`', '') %}
    {% do joinery._validate_identifier(stored, 'column', 'new_rows_filter') %}
    {% if not joinery.is_incremental() %}
        {{ return('true') }}
    {% endif %}
    {#- Not previous_max, which would ask is_incremental() a second time. -#}
    {{ return('coalesce(' ~ joinery._sql_expression(source_column) ~ ' > ' ~ joinery._watermark_subquery(stored, 'null')
        ~ ', true)') }}
{% endmacro %}
