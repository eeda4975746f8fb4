{#- fk_join's join of the two states' live rows (tombstones left out): the SELECT of a first run or a
    full refresh (_fk_join_full_sql), and the CTEs and join an incremental run reuses to recompute
    the affected keys. -#}

{% macro _fk_join_select_list(outputs, changed_at=true) %}
    {#- The joined row's columns: the outputs, each from its side (left_state, right_state), then,
        with `changed_at`, the arrival of each side's state version (the change-feed path has none). -#}
    {% set select_list = [] %}
    {% for output in outputs %}
        {% do select_list.append(joinery._select_item(output.side ~ '.' ~ joinery._quote_identifier(output.column),
            output.name)) %}
    {% endfor %}
    {% if changed_at %}
        {% do select_list.append('left_state._joinery_changed_at as _joinery_left_changed_at') %}
        {% do select_list.append('right_state._joinery_changed_at as _joinery_right_changed_at') %}
    {% endif %}
    {{ return(select_list) }}
{% endmacro %}


{% macro _fk_join_full_sql(left, right, plan) %}
    {#- The first run or a full refresh: the join of the two states' live rows. -#}
    {% set join_sql %}
    with

    {{ joinery._fk_join_live_state_ctes(left, right) }}

    {{ joinery._fk_join_live_join_sql(plan) }}
    {%- endset %}
    {{ return(join_sql) }}
{% endmacro %}


{% macro _fk_join_live_state_ctes(left_rows, right) %}
    {#- The CTEs left_state and right_state: the rows of `left_rows` (the left state, or the CTE of
        its affected rows) and of the right state that are not tombstones. -#}
    left_state as (
        select * from {{ left_rows }}
        where not _joinery_tombstone
    ),

    right_state as (
        select * from {{ right }}
        where not _joinery_tombstone
    )
{%- endmacro %}


{% macro _fk_join_live_join_sql(plan) %}
    {#- The join of left_state and right_state, one row per result with the plan's outputs: the
        whole first run, and the recomputed results of an incremental one. -#}
    select
        {{ joinery._fk_join_select_list(plan.outputs) | join(',\n        ') }}
    from left_state
    {{ plan.join_type }} join right_state
        on {{ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_state') }}
{%- endmacro %}
