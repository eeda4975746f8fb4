{#- fk_join's incremental runs (a joinery_upsert model on an existing table): which left keys a
    batch of state changes affects, and their new results, either only those that changed
    (_fk_join_incremental_sql) or, into a delta table, all of them (_fk_join_affected_sql). -#}

{% macro _fk_join_incremental_sql(left, right, plan) %}
    {#- An incremental run: the affected left keys' new results, compared with their stored ones. -#}
    {% set value_names = plan.outputs | map(attribute='name') | reject('in', plan.left_keys) | list %}
    {% set first_key = joinery._quote_identifier(plan.left_keys[0]) %}
    {% set incremental_sql %}
    with

    {{ joinery._fk_join_affected_ctes(left, right, plan) }},

    {{ joinery._fk_join_live_state_ctes('affected_left', right) }},

    recomputed as (
        {{ joinery._fk_join_live_join_sql(plan) | indent(4) }}
    ),

    previous_affected as (
        select previous_result.*
        from previous_result
        left semi join affected_left
            on {{ joinery._fk_join_key_match(plan.left_keys, plan.left_keys, 'previous_result', 'affected_left') }}
    )

    {#- One full join of the new and the stored results of the affected keys gives both kinds of
        change: a key with no new result is a delete, and a key whose new result differs from the
        stored one (or has none stored) an upsert. Rows whose result is unchanged are not emitted: an
        unchanged re-publish changes nothing, and a re-run over changes already applied yields no
        row at all. One join rather than an upsert branch and a delete branch: Spark inlines a CTE
        at each use, so two branches would compute the affected keys four times and read the stored
        result twice. A delete's value columns are NULL: joinery_upsert reads only its key. -#}
    select
        {{ joinery._fk_join_output_columns(plan) | join(',\n        ') }},
        recomputed._joinery_left_changed_at,
        recomputed._joinery_right_changed_at,
        recomputed.{{ first_key }} is null as {{ joinery._quote_identifier(joinery.upsert_marker_column()) }}
    from recomputed
    full join previous_affected
        on {{ joinery._fk_join_key_match(plan.left_keys, plan.left_keys, 'previous_affected', 'recomputed') }}
    where
        recomputed.{{ first_key }} is null
        or previous_affected.{{ first_key }} is null
        {% for name in value_names -%}
        or not ({{ joinery._same_value_sql('recomputed.' ~ joinery._quote_identifier(name),
            'previous_affected.' ~ joinery._quote_identifier(name), plan.value_types[name]) }})
        {% endfor %}
    {%- endset %}
    {{ return(incremental_sql) }}
{% endmacro %}


{% macro _fk_join_output_columns(plan) %}
    {#- The incremental run's columns: a key from whichever side has it, the rest from the new result. -#}
    {% set output_columns = [] %}
    {% for output in plan.outputs %}
        {% set quoted = joinery._quote_identifier(output.name) %}
        {% if output.name in plan.left_keys %}
            {% do output_columns.append('coalesce(recomputed.' ~ quoted ~ ', previous_affected.' ~ quoted ~ ') as '
                ~ quoted) %}
        {% else %}
            {% do output_columns.append('recomputed.' ~ quoted) %}
        {% endif %}
    {% endfor %}
    {{ return(output_columns) }}
{% endmacro %}


{% macro _fk_join_affected_ctes(left, right, plan) %}
    {#- The stored result, its two watermarks, and the left state rows whose result may have changed
        since (affected_left), as CTEs for _fk_join_incremental_sql.
        Each result row keeps the arrival (`_joinery_changed_at`) of the left and right
        state versions it was computed from; a side's watermark is the greatest of those. It never
        passes a state change the result has not consumed (every stored value came from a state
        read in an earlier run), so state rows above it are the changes to apply, plus possibly
        some already applied: when a run's changes emit nothing (deletes of absent rows, unchanged
        re-publishes, right rows nobody references) the watermark stays and they are read again
        next run, which emits nothing again. A NULL `_joinery_changed_at` (a state built without
        `loaded_at`) counts as changed on every run. -#}
    {% set affected_ctes -%}

    previous_result as (
        select * from {{ this }}
    ),

    watermark as (
        select
            max(_joinery_left_changed_at) as left_watermark,
            max(_joinery_right_changed_at) as right_watermark
        from previous_result
    ),

    right_changes as (
        select distinct {{ joinery._quoted_column_list(plan.right_keys, 'right_state') }}
        from {{ right }} as right_state
        cross join watermark
        where
            watermark.right_watermark is null
            or right_state._joinery_changed_at is null
            or right_state._joinery_changed_at > watermark.right_watermark
    ),

    {#- One pass over the left state: a left row is affected when it changed itself, or when its
        (current) foreign key points at a right row that changed. A row that used to point there
        and no longer does changed itself, so its old result is found through the left side. -#}
    affected_left as (
        select left_state.*
        {{ joinery._fk_join_changed_left_rows(left, plan, 'right_changes', '        ') }}
            or right_changes.{{ joinery._quote_identifier(plan.right_keys[0]) }} is not null
    )
    {%- endset %}
    {{ return(affected_ctes) }}
{% endmacro %}


{% macro _fk_join_changed_left_rows(left, plan, right_rows, indent) %}
    {#- The FROM and WHERE both incremental forms share: the left state, with the watermark and
        `right_rows` (a CTE with the right key) joined on the foreign key, where the left row
        changed since the left watermark; the caller adds its own `or` for a changed right row.
        Lines after the first start with `indent` (the spaces before the caller's FROM). -#}
    {% set lines = [
        'from ' ~ left ~ ' as left_state',
        'cross join watermark',
        'left join ' ~ right_rows,
        '    on ' ~ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', right_rows),
        'where',
        '    watermark.left_watermark is null',
        '    or left_state._joinery_changed_at is null',
        '    or left_state._joinery_changed_at > watermark.left_watermark'] %}
    {{ return(lines | join('\n' ~ indent)) }}
{% endmacro %}


{% macro _fk_join_affected_sql(left, right, plan) %}
    {#- An incremental run into a delta table: the new result of every affected left key,
        from one pass over the left state joined to the right state (each state read once, the
        stored result only for its two watermarks). A key with no result is a delete (the model's
        deleted_column). joinery_upsert's MERGE leaves a stored row equal to its new one as it is
        and deletes only keys it holds, and on delta a MERGE that changes nothing commits nothing,
        so unchanged results and deletes of absent keys cost nothing there. Other formats take
        _fk_join_incremental_sql, which emits only the results that changed (docs/fk_join.md, "What
        a batch costs"). -#}
    {% set right_live = 'coalesce(not right_rows._joinery_tombstone, false)' %}
    {% set columns = [] %}
    {% for output in plan.outputs %}
        {% set column = joinery._quote_identifier(output.column) %}
        {% do columns.append(joinery._select_item('left_state.' ~ column if output.side == 'left_state'
            else 'if(' ~ right_live ~ ', right_rows.' ~ column ~ ', null)', output.name)) %}
    {% endfor %}
    {% set affected_sql %}
    with

    watermark as (
        select
            max(_joinery_left_changed_at) as left_watermark,
            max(_joinery_right_changed_at) as right_watermark
        from {{ this }}
    ),

    right_rows as (
        select
            right_state.*,
            watermark.right_watermark is null
                or right_state._joinery_changed_at is null
                or right_state._joinery_changed_at > watermark.right_watermark as _joinery_right_changed
        from {{ right }} as right_state
        cross join watermark
    )

    select
        {{ columns | join(',\n        ') }},
        left_state._joinery_changed_at as _joinery_left_changed_at,
        if({{ right_live }}, right_rows._joinery_changed_at, null) as _joinery_right_changed_at,
        left_state._joinery_tombstone{{ ' or not ' ~ right_live if plan.join_type == 'inner' else '' }}
            as {{ joinery._quote_identifier(joinery.upsert_marker_column()) }}
    {{ joinery._fk_join_changed_left_rows(left, plan, 'right_rows', '    ') }}
        or coalesce(right_rows._joinery_right_changed, false)
    {%- endset %}
    {{ return(affected_sql) }}
{% endmacro %}
