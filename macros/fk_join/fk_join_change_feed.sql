{#- fk_join over two Delta tables read as their current state plus their change data feeds
    (fk_join's `change_feed=true`): no state models. A run pins each table at its current version;
    a full build joins the two pinned tables, an incremental run recomputes only the left keys the
    feeds since the versions last consumed affect, and the model's joinery_upsert commit records
    the versions it read (docs/fk_join.md, "Over change feeds"). -#}

{% macro _fk_join_feed_sql(left, right, plan) %}
    {#- The SQL of a change-feed fk_join. Its versions are pinned when the run starts, so joinery_upsert
        renders it then (config `change_feed`, _upsert_model_sql); for `dbt compile` and `dbt show`
        it is the full build's join of the tables as they are. -#}
    {% set ranges = joinery._change_feed_pinned_ranges([left, right], 'fk_join') %}
    {% if ranges is none %}
        {{ return(joinery._fk_join_feed_join_sql(plan, left, right)) }}
    {% endif %}
    {% set left_range = ranges[left.render()] %}
    {% set right_range = ranges[right.render()] %}
    {% set left_pinned = left ~ ' version as of ' ~ left_range.to %}
    {% set right_pinned = right ~ ' version as of ' ~ right_range.to %}
    {% if joinery._upsert_decided_build_mode().full %}
        {{ return(joinery._fk_join_feed_join_sql(plan, left_pinned, right_pinned)) }}
    {% endif %}
    {{ return(joinery._fk_join_feed_incremental_sql(left, right, plan, {'left': left_range, 'right': right_range},
        left_pinned, right_pinned)) }}
{% endmacro %}


{% macro _fk_join_feed_join_sql(plan, left_rows, right_rows) %}
    {#- The join of the two tables (or pinned versions of them, `left_rows` / `right_rows`). -#}
    {% set join_sql %}
    select
        {{ joinery._fk_join_select_list(plan.outputs, changed_at=false) | join(',\n        ') }}
    from {{ left_rows }} as left_state
    {{ plan.join_type }} join {{ right_rows }} as right_state
        on {{ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_state') }}
    {%- endset %}
    {{ return(join_sql) }}
{% endmacro %}


{% macro _fk_join_feed_incremental_sql(left, right, plan, ranges, left_pinned, right_pinned) %}
    {#- The new result of every affected left key, from one pass over the pinned left table: a left
        row is affected when its key is in the left feed (inserted, updated, its foreign key moved)
        or its current foreign key points at a right key in the right feed. A left key whose last
        change in the feed removed it (a delete, or the old value of a changed key) is a delete (the
        model's deleted_column), from the feed alone. A MERGE leaves a stored row equal to its new
        one as it is, and deletes only keys it holds. Both feeds empty: no row. -#}
    {% set left_changes = ranges.left.from <= ranges.left.to %}
    {% set right_changes = ranges.right.from <= ranges.right.to %}
    {% set marker = joinery._quote_identifier(joinery.upsert_marker_column()) %}
    {% set first_right_key = joinery._quote_identifier(plan.right_keys[0]) %}
    {% set deletes = [] %}
    {% for output in plan.outputs %}
        {% do deletes.append(joinery._select_item('left_changes.' ~ joinery._quote_identifier(output.column)
            if output.side == 'left_state' and output.column in plan.left_keys
            else 'cast(null as ' ~ plan.value_types[output.name] ~ ')', output.name)) %}
    {% endfor %}
    {% set incremental_sql %}
    with

    {{ joinery._fk_join_feed_changes_ctes(left, right, plan, ranges, left_pinned) }}

    select
        {{ joinery._fk_join_select_list(plan.outputs, changed_at=false) | join(',\n        ') }},
        {{ 'right_state.' ~ first_right_key ~ ' is null' if plan.join_type == 'inner' else 'false' }} as {{ marker }}
    from changed_left as left_state
    left join {{ right_pinned }} as right_state
        on {{ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_state') }}
    {%- if not (left_changes or right_changes) %}
    where false
    {%- endif %}
    {%- if left_changes %}

    union all

    select
        {{ deletes | join(',\n        ') }},
        true as {{ marker }}
    from left_changes
    where left_changes._joinery_removed
    {%- endif %}
    {%- endset %}
    {{ return(incremental_sql) }}
{% endmacro %}


{% macro _fk_join_feed_changes_ctes(left, right, plan, ranges, left_pinned) %}
    {#- left_changes (each left key of the left feed, and whether its last change removed it: the
        later commit wins, within a commit the row written over a delete or an old value),
        right_changes (the right keys of the right feed), and changed_left (the pinned left rows
        either affects), for _fk_join_feed_incremental_sql. An empty range has no CTE. -#}
    {% set removal = "_change_type in ('delete', 'update_preimage')" %}
    {% set conditions = [] %}
    {% set ctes %}
    {%- if ranges.left.from <= ranges.left.to -%}
    left_changes as (
        select
            {{ joinery._quoted_column_list(plan.left_keys) }},
            max_by({{ removal }}, _commit_version * 2 + if({{ removal }}, 0, 1)) as _joinery_removed
        from table_changes({{ joinery._sql_string(left.render()) }}, {{ ranges.left.from }}, {{ ranges.left.to }})
        group by {{ joinery._quoted_column_list(plan.left_keys) }}
    ),
    {% do conditions.append('left_changes.' ~ joinery._quote_identifier(plan.left_keys[0]) ~ ' is not null') %}
    {% endif -%}
    {%- if ranges.right.from <= ranges.right.to %}
    right_changes as (
        {{ joinery._change_feed_keys_sql(right, plan.right_keys, ranges.right) }}
    ),
    {% do conditions.append('right_changes.' ~ joinery._quote_identifier(plan.right_keys[0]) ~ ' is not null') %}
    {% endif %}
    changed_left as (
        select left_now.*
        from {{ left_pinned }} as left_now
        {%- if 'left_changes.' in conditions | join(' ') %}
        left join left_changes
            on {{ joinery._fk_join_key_match(plan.left_keys, plan.left_keys, 'left_now', 'left_changes') }}
        {%- endif %}
        {%- if 'right_changes.' in conditions | join(' ') %}
        left join right_changes
            on {{ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_now', 'right_changes') }}
        {%- endif %}
        where {{ conditions | join(' or ') if conditions else 'false' }}
    )
    {%- endset %}
    {{ return(ctes) }}
{% endmacro %}
