{#- fk_join_changes: the output changelog of an fk_join result, as Kafka Streams emits it (one row
    per key whose value changed or disappeared, numbered by run), and the CTEs of its runs after the
    first. -#}

{% macro fk_join_changes(result, key=none) %}
    {{ return(adapter.dispatch('fk_join_changes', 'joinery')(result, key)) }}
{% endmacro %}


{% macro default__fk_join_changes(result, key=none) %}
    {#- The output changelog of an fk_join result, as Kafka Streams emits it: for each run, one row
        per key whose result value changed (an upsert with the new value) or disappeared (a
        tombstone, value columns NULL). It compares the result with the newest logged value of
        each key, so an unchanged re-publish logs nothing, a key that never had a result logs no
        tombstone, and a run with no change logs no row. Use it in a model with
        materialized='incremental' and incremental_strategy='append'. -#}
    {% set macro_name = 'fk_join_changes' %}
    {% if result is none or result is string %}
        {{ joinery._raise_argument_error(macro_name, 'result', result | string,
            'expected the fk_join model: ref()') }}
    {% endif %}
    {% set result_columns = joinery._columns_of(result) %}
    {% set result_names = result_columns | map(attribute='name') | list %}
    {% set keys = joinery._column_argument(result, joinery.upsert_key_argument(key, macro_name), 'key', macro_name,
        result_names) %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% set values = [] %}
    {% set value_types = {} %}
    {% for column in result_columns
        if not column.name | lower is in(keys | map('lower') | list) and not (column.name | lower).startswith('_joinery_') %}
        {% do values.append(column.name) %}
        {% do value_types.update({column.name: column.dtype}) %}
    {% endfor %}
    {% if joinery._fk_join_incremental_run() %}
        {{ return(joinery._fk_join_changes_incremental_sql(result, keys, values, value_types)) }}
    {% endif %}
    {% set changes_sql %}
    with

    changes as (
        select
            {{ joinery._quoted_column_list(keys + values) }},
            false as _joinery_tombstone
        from {{ result }}
    )

    select
        changes.*,
        cast(1 as bigint) as _joinery_run
    from changes
    {%- endset %}
    {{ return(changes_sql) }}
{% endmacro %}


{% macro _fk_join_changes_incremental_sql(result, keys, values, value_types) %}
    {#- A run after the first: the result's keys whose value differs from their newest logged value
        (upserts), and the logged keys that have no result any more (tombstones), as run N + 1. -#}
    {% set key_match = joinery._fk_join_key_match(keys, keys, 'current_result', 'latest_logged') %}
    {% set changes_sql %}
    with

    current_result as (
        select {{ joinery._quoted_column_list(keys + values) }}
        from {{ result }}
    ),

    change_log as (
        select * from {{ this }}
    ),

    previous_run as (
        select coalesce(max(_joinery_run), 0) as last_run from change_log
    ),

    {{ joinery._fk_join_changes_latest_logged(keys) }},

    upserts as (
        select
            {{ joinery._quoted_column_list(keys + values, 'current_result') }},
            false as _joinery_tombstone
        from current_result
        left join latest_logged
            on {{ key_match }}
        where
            latest_logged.{{ joinery._quote_identifier(keys[0]) }} is null
            {% for name in values -%}
            or not ({{ joinery._same_value_sql('current_result.' ~ joinery._quote_identifier(name),
                'latest_logged.' ~ joinery._quote_identifier(name), value_types[name]) }})
            {% endfor %}
    ),

    {{ joinery._fk_join_changes_tombstones(keys, values) }},

    changes as (
        select * from upserts
        union all
        select * from tombstones
    )

    select
        changes.*,
        previous_run.last_run + 1 as _joinery_run
    from changes
    cross join previous_run
    {%- endset %}
    {{ return(changes_sql) }}
{% endmacro %}


{% macro _fk_join_changes_latest_logged(keys) %}
    {#- The CTE latest_logged: the newest logged row of each key, unless it is a tombstone (the key
        has no value now). A CTE of its own to keep _fk_join_changes_incremental_sql short. -#}
    {% set latest_logged_sql -%}
    latest_logged as (
        select *
        from (
            select
                *,
                row_number() over (
                    partition by {{ joinery._quoted_column_list(keys) }} order by _joinery_run desc
                ) as _joinery_rank
            from change_log
        ) as ranked
        where _joinery_rank = 1 and not _joinery_tombstone
    )
    {%- endset %}
    {{ return(latest_logged_sql) }}
{% endmacro %}


{% macro _fk_join_changes_tombstones(keys, values) %}
    {#- The CTE tombstones: a tombstone (value columns NULL) for each logged key that has no result
        any more. A CTE of its own to keep _fk_join_changes_incremental_sql short. -#}
    {% set tombstones_sql -%}
    tombstones as (
        select
            {{ joinery._quoted_column_list(keys, 'latest_logged') }},
            {% for name in values -%}
            {#- NULL of the column's own type. -#}
            if(false, latest_logged.{{ joinery._quote_identifier(name) }}, null) as {{ joinery._quote_identifier(name) }},
            {% endfor -%}
            true as _joinery_tombstone
        from latest_logged
        left anti join current_result
            on {{ joinery._fk_join_key_match(keys, keys, 'latest_logged', 'current_result') }}
    )
    {%- endset %}
    {{ return(tombstones_sql) }}
{% endmacro %}
