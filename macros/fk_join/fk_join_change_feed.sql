{#- fk_join over two Delta tables read as their current state plus their change data feeds
    (fk_join's `change_feed=true`): no state models. The model pins each table at its current version
    while it compiles (change_feed/change_feed.sql), and its SQL reads those versions: a full build
    joins the two pinned tables; an incremental run recomputes only what the feeds since the versions
    last consumed affect. The versions ride in the run's plan to its joinery_upsert commit, which
    records them (docs/fk_join.md, "Over change feeds"). -#}

{% macro _fk_join_feed_sql(left, right, plan) %}
    {#- The SQL of a change-feed fk_join, with its run's plan: what `dbt compile` shows is what the
        next run executes. A run whose feeds hold no change plans none. -#}
    {% set pinned = joinery._change_feed_pinned([left, right], 'fk_join') %}
    {% set left_range = pinned.ranges[left.render()] %}
    {% set right_range = pinned.ranges[right.render()] %}
    {% set left_pinned = left ~ ' version as of ' ~ left_range.to %}
    {% set right_pinned = right ~ ' version as of ' ~ right_range.to %}
    {% set run = {'mode': 'full' if pinned.mode.full else 'incremental', 'reason': pinned.mode.reason,
        'feeds': pinned.versions, 'built': pinned.mode.built, 'costs': pinned.mode.costs} %}
    {% if pinned.mode.full %}
        {{ return(joinery._upsert_planned_sql(joinery._fk_join_feed_join_sql(plan, left_pinned, right_pinned), run)) }}
    {% elif not pinned.changed %}
        {% do run.update({'rows': 0}) %}
        {{ return(joinery._upsert_planned_sql(joinery._fk_join_feed_join_sql(plan, left_pinned, right_pinned)
            ~ '\nwhere false', run)) }}
    {% endif %}
    {% set right_outputs = plan.outputs | selectattr('side', 'equalto', 'right_state') | map(attribute='name') | list %}
    {% do run.update({'partial': {'column': joinery._upsert_partial_column(), 'columns': right_outputs}}) %}
    {{ return(joinery._upsert_planned_sql(joinery._fk_join_feed_incremental_sql(left, right, plan,
        {'left': left_range, 'right': right_range}, left_pinned, right_pinned), run)) }}
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
    {#- The changes of an incremental run, three kinds of row:
        - each left key of the left feed, from its last change there: the row as it is now (a
          post-image, joined to the pinned right table), or its removal (a delete marker). The wide
          left table is not read for them.
        - each left row whose foreign key points at a right key the right feed changed, found by a
          narrow scan (its key and foreign key) of the pinned left table: a partial row that updates
          the right side's columns only (joinery_upsert's partial rows, `_joinery_partial`), or a
          delete marker where an inner join loses its match;
        - of those, with an inner join, the rows whose right key did not exist before the feed's range
          and does now: the join gains them, so they need the full left row.
        A row the feeds name twice is recomputed once, from the left feed. -#}
    {% set marker = joinery._quote_identifier(joinery.upsert_marker_column()) %}
    {% set partial = joinery._quote_identifier(joinery._upsert_partial_column()) %}
    {% set inner = plan.join_type == 'inner' %}
    {% set first_right_key = 'right_state.' ~ joinery._quote_identifier(plan.right_keys[0]) %}
    {% set has_left = ranges.left.from <= ranges.left.to %}
    {% set has_right = ranges.right.from <= ranges.right.to %}
    {% set branches = [] %}
    {% if has_left %}
        {% do branches.append('select\n        ' ~ joinery._fk_join_select_list(plan.outputs, changed_at=false)
            | join(',\n        ') ~ ',\n        left_state._joinery_removed' ~ (' or ' ~ first_right_key ~ ' is null'
            if inner else '') ~ ' as ' ~ marker ~ ',\n        false as ' ~ partial
            ~ '\n    from left_changes as left_state\n    left join ' ~ right_pinned ~ ' as right_state\n        on '
            ~ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_state')) %}
    {% endif %}
    {% if has_right %}
        {% do branches.append(joinery._fk_join_feed_partial_sql(plan, right_pinned, marker, partial, inner)) %}
        {% if inner %}
            {% do branches.append('select\n        ' ~ joinery._fk_join_select_list(plan.outputs, changed_at=false)
                | join(',\n        ') ~ ',\n        false as ' ~ marker ~ ',\n        false as ' ~ partial
                ~ '\n    from ' ~ left_pinned ~ ' as left_state\n    inner join ' ~ right_pinned ~ ' as right_state\n        on '
                ~ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_state')
                ~ '\n    left semi join affected_left\n        on '
                ~ joinery._fk_join_key_match(plan.left_keys, plan.left_keys, 'left_state', 'affected_left')
                ~ ' and affected_left._joinery_gained') %}
        {% endif %}
    {% endif %}
    {% set incremental_sql %}
    with

    {{ joinery._fk_join_feed_changes_ctes(left, right, plan, ranges, left_pinned) }}

    {{ branches | join('\n\n    union all\n\n    ') }}
    {%- endset %}
    {{ return(incremental_sql) }}
{% endmacro %}


{% macro _fk_join_feed_partial_sql(plan, right_pinned, marker, partial, inner) %}
    {#- The partial rows of _fk_join_feed_incremental_sql: the right side's columns of each affected
        left key (NULL where its right row is gone, on a left join), a delete marker where an inner
        join lost its match; the rows an inner join gains come whole, from another branch. -#}
    {% set outputs = [] %}
    {% for output in plan.outputs %}
        {% if output.side == 'right_state' or output.column in plan.left_keys %}
            {% do outputs.append(joinery._select_item(output.side ~ '.' ~ joinery._quote_identifier(output.column),
                output.name)) %}
        {% else %}
            {% do outputs.append('cast(null as ' ~ plan.value_types[output.name] ~ ') as '
                ~ joinery._quote_identifier(output.name)) %}
        {% endif %}
    {% endfor %}
    {% set first_right_key = 'right_state.' ~ joinery._quote_identifier(plan.right_keys[0]) %}
    {% set partial_sql %}
select
        {{ outputs | join(',\n        ') }},
        {{ first_right_key ~ ' is null' if inner else 'false' }} as {{ marker }},
        true as {{ partial }}
    from affected_left as left_state
    left join {{ right_pinned }} as right_state
        on {{ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_state') }}
    {%- if inner %}
    where not left_state._joinery_gained
    {%- endif %}
    {%- endset %}
    {{ return(partial_sql) }}
{% endmacro %}


{% macro _fk_join_feed_changes_ctes(left, right, plan, ranges, left_pinned) %}
    {#- left_changes (each left key of the left feed: its last change there, the row written over a
        removal within a commit, and whether it removed the key), right_changes (each right key of
        the right feed, and whether it existed before the range: its first change there is a delete
        or an update's old value), and affected_left (the narrow scan: the key and foreign key of the
        pinned left rows pointing at a changed right key, the left feed's keys left out, and whether
        the join gains them). An empty range has no CTE. -#}
    {% set removal = "_change_type in ('delete', 'update_preimage')" %}
    {% set left_keys = joinery._quoted_column_list(plan.left_keys) %}
    {% set ctes = [] %}
    {% if ranges.left.from <= ranges.left.to %}
        {% do ctes.append('left_changes as (\n        select * except (joinery_last), ' ~ removal
            ~ ' as _joinery_removed\n'
            ~ '        from (\n            select *, row_number() over (partition by ' ~ left_keys
            ~ ' order by _commit_version desc, if(' ~ removal ~ ', 0, 1) desc) as joinery_last\n'
            ~ '            from table_changes(' ~ joinery._sql_string(left.render()) ~ ', ' ~ ranges.left.from ~ ', '
            ~ ranges.left.to ~ ')\n        ) as left_events\n        where joinery_last = 1\n    )') %}
    {% endif %}
    {% if ranges.right.from <= ranges.right.to %}
        {% set right_keys = joinery._quoted_column_list(plan.right_keys) %}
        {% do ctes.append('right_changes as (\n        select ' ~ right_keys ~ ', min_by(' ~ removal
            ~ ', _commit_version * 2 + if(' ~ removal ~ ', 0, 1)) as _joinery_existed\n        from table_changes('
            ~ joinery._sql_string(right.render()) ~ ', ' ~ ranges.right.from ~ ', ' ~ ranges.right.to ~ ')\n'
            ~ '        group by ' ~ right_keys ~ '\n    )') %}
        {% do ctes.append(joinery._fk_join_feed_affected_cte(plan, left_pinned, ranges.left.from <= ranges.left.to)) %}
    {% endif %}
    {{ return(ctes | join(',\n\n    ')) }}
{% endmacro %}


{% macro _fk_join_feed_affected_cte(plan, left_pinned, has_left) %}
    {#- affected_left: the narrow scan of _fk_join_feed_changes_ctes. -#}
    {% set columns = joinery._quoted_column_list((plan.left_keys + plan.foreign_keys) | unique | list, 'left_now') %}
    {% set affected_sql %}
affected_left as (
        select {{ columns }}, not right_changes._joinery_existed as _joinery_gained
        from {{ left_pinned }} as left_now
        inner join right_changes
            on {{ joinery._fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_now', 'right_changes') }}
        {%- if has_left %}
        left anti join left_changes
            on {{ joinery._fk_join_key_match(plan.left_keys, plan.left_keys, 'left_now', 'left_changes') }}
        {%- endif %}
    )
    {%- endset %}
    {{ return(affected_sql) }}
{% endmacro %}
