{#- changelog_state: a changelog (change events of a keyed table, arriving in batches) folded into
    its current state, the KTable of seed document 003 (Kafka KIP-213). One row per key: the version
    with the greatest `sequence_by`, whatever order the versions arrived in. A delete stays in the
    state as a tombstone row (`_joinery_tombstone` true), so that an older event arriving later loses
    to it instead of bringing the key back. `_joinery_changed_at` is the arrival (`loaded_at`) of each
    row's current version: the rows a run changed are exactly those above the state's watermark
    before the run, which is how fk_join and other models downstream read just the changes. -#}

{% macro changelog_state(changelog, key=none, sequence_by=none, deleted=none, loaded_at=none, operation=none,
    operation_values=none, change_feed=false) %}
    {{ return(adapter.dispatch('changelog_state', 'joinery')(changelog, key, sequence_by, deleted,
        loaded_at, operation, operation_values, change_feed)) }}
{% endmacro %}


{% macro default__changelog_state(changelog, key=none, sequence_by=none, deleted=none, loaded_at=none, operation=none,
    operation_values=none, change_feed=false) %}
    {% set macro_name = 'changelog_state' %}
    {% if changelog is none or changelog is string %}
        {{ joinery._raise_argument_error(macro_name, 'changelog', changelog | string,
            'expected a relation: ref(), source() or this') }}
    {% elif change_feed is not boolean %}
        {{ joinery._raise_argument_error(macro_name, 'change_feed', change_feed, 'expected true or false') }}
    {% elif change_feed %}
        {{ return(joinery._changelog_state_feed_sql(changelog, key, {'sequence_by': sequence_by, 'deleted': deleted,
            'loaded_at': loaded_at, 'operation': operation, 'operation_values': operation_values})) }}
    {% endif %}
    {#- One `describe` of the changelog for every check below (empty at parse time). -#}
    {% set columns = joinery._columns_of(changelog) %}
    {% set names = columns | map(attribute='name') | list %}
    {#- The state is keyed by key: it defaults to the model's unique_key and must match it. -#}
    {% set key_columns = joinery._column_argument(changelog, joinery.upsert_key_argument(key, macro_name), 'key',
        macro_name, names) %}
    {% set sequence_columns = joinery._column_argument(changelog, sequence_by, 'sequence_by', macro_name, names) %}
    {% set loaded_at_column = none %}
    {% if loaded_at is not none %}
        {% set loaded_at_column = joinery._column_argument(changelog, loaded_at, 'loaded_at', macro_name, names) %}
        {% if loaded_at_column | length != 1 %}
            {{ joinery._raise_argument_error(macro_name, 'loaded_at', loaded_at, 'expected one column name') }}
        {% endif %}
        {% set loaded_at_column = loaded_at_column[0] %}
    {% endif %}
    {% set operation_check = joinery._changelog_state_operation_check(changelog, operation, operation_values,
        names) %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% for reserved in ['_joinery_tombstone', '_joinery_changed_at', '_joinery_source_rank', '_joinery_rank'] %}
        {% if joinery._find_column(names, reserved) is not none %}
            {{ joinery._raise_argument_error(macro_name, 'changelog', changelog | string,
                'a changelog may not have a column named ' ~ reserved ~ ' (joinery adds it)') }}
        {% endif %}
    {% endfor %}
    {% do joinery.upsert_check_marker_clash(names + ['_joinery_tombstone', '_joinery_changed_at'], macro_name) %}
    {% set on_existing_table = joinery._fk_join_incremental_run() %}
    {% set plan = {
        'names': names,
        'key_columns': key_columns,
        'loaded_at_column': loaded_at_column,
        'deleted_sql': joinery._changelog_state_deleted_expression(changelog, deleted),
        'ordering': joinery._changelog_state_ordering(columns, sequence_columns, loaded_at_column),
        'checks': joinery._changelog_state_row_checks(changelog, key_columns, loaded_at_column, operation_check),
        'on_existing_table': on_existing_table,
        'watermark_sql': joinery._changelog_state_watermark(columns, loaded_at_column)
            if on_existing_table and loaded_at_column else none,
    } %}
    {{ return(joinery._changelog_state_sql(changelog, plan)) }}
{% endmacro %}


{% macro _changelog_state_sql(changelog, plan) %}
    {#- The state's SELECT: the new events, and on an existing table the stored versions of the keys
        they touch, ranked per key; the winners of the new events are the rows to write. -#}
    {% set state_sql %}
    with

    {% if plan.on_existing_table %}
    previous_state as (
        select * from {{ this }}
    ),

    {% endif %}
    {{ joinery._changelog_state_new_events(changelog, plan) }},

    {% if plan.on_existing_table %}
    {#- Only the keys the new events touch compete with their previous state; every other key is
        left alone by joinery_upsert. The previous version wins exact ties, so a batch read twice
        (the watermark did not move) yields no changed row. -#}
    {{ joinery._changelog_state_competing_state(plan) }},

    candidates as (
        select * from new_events
        union all
        select * from competing_state
    ),

    {% else %}
    candidates as (
        select * from new_events
    ),

    {% endif %}
    ranked as (
        select
            *,
            row_number() over (
                partition by {{ joinery._quoted_column_list(plan.key_columns) }}
                order by {{ plan.ordering | join(', ') }}, _joinery_source_rank asc
            ) as _joinery_rank
        from candidates
    )

    select
        {{ joinery._quoted_column_list(plan.names) }},
        _joinery_tombstone,
        _joinery_changed_at
    from ranked
    where
        _joinery_rank = 1
        {% if plan.on_existing_table %}
        and _joinery_source_rank = 1
        {% endif %}
    {%- endset %}
    {{ return(state_sql) }}
{% endmacro %}


{% macro _changelog_state_competing_state(plan) %}
    {#- The CTE competing_state of a run on an existing table: the stored versions of the keys the
        new events touch, with _joinery_source_rank 0 so that they win exact ties with a new event.
        A CTE of its own to keep _changelog_state_sql short. -#}
    {% set competing_sql -%}
    competing_state as (
        select
            {{ joinery._quoted_column_list(plan.names, 'previous_state') }},
            previous_state._joinery_tombstone,
            previous_state._joinery_changed_at,
            0 as _joinery_source_rank
        from previous_state
        left semi join new_events
            on {{ joinery._fk_join_key_match(plan.key_columns, plan.key_columns, 'previous_state', 'new_events') }}
    )
    {%- endset %}
    {{ return(competing_sql) }}
{% endmacro %}


{% macro _changelog_state_new_events(changelog, plan) %}
    {#- The new_events CTE: the changelog rows to apply (above the watermark, if any), each row
        checked (plan.checks) and marked as a tombstone or not. -#}
    {% set new_events_sql -%}
new_events as (
        select
            {{ joinery._quoted_column_list(plan.names, 'changelog') }},
            coalesce(({{ plan.deleted_sql }}), false) as _joinery_tombstone,
            {% if plan.loaded_at_column -%}
            changelog.{{ joinery._quote_identifier(plan.loaded_at_column) }} as _joinery_changed_at,
            {%- else -%}
            cast(null as timestamp) as _joinery_changed_at,
            {%- endif %}
            1 as _joinery_source_rank
        from {{ changelog }} as changelog
        where
            {#- A NULL loaded_at passes the watermark filter so that its check fails the run: filtered
                out, the row would be skipped silently by every incremental run. -#}
            {% if plan.watermark_sql is not none -%}
            (
                changelog.{{ joinery._quote_identifier(plan.loaded_at_column) }} > {{ plan.watermark_sql }}
                or changelog.{{ joinery._quote_identifier(plan.loaded_at_column) }} is null
            )
            and
            {% endif -%}
            {{ plan.checks | join('\n            and ') }}
    )
    {%- endset %}
    {{ return(new_events_sql) }}
{% endmacro %}


{% macro _changelog_state_ordering(columns, sequence_columns, loaded_at_column) %}
    {#- The ranking of a key's versions, the winner first: greatest sequence_by, then latest arrival. -#}
    {% set ordering = [] %}
    {% for column in sequence_columns %}
        {% do ordering.append(joinery._quote_identifier(column) ~ ' desc nulls last') %}
    {% endfor %}
    {% if loaded_at_column %}
        {% do ordering.append(joinery._quote_identifier(loaded_at_column) ~ ' desc nulls last') %}
    {% endif %}
    {#- Remaining ties (same version, same arrival): a delete wins, then a hash of the whole row, so
        the winner is a function of the rows alone and an incremental run picks what a full
        recompute picks. Maps and variants, which Spark cannot hash, and collated strings are hashed
        in their comparable form (_comparable_sql). -#}
    {% do ordering.append('_joinery_tombstone desc') %}
    {% set hashable = [] %}
    {% for column in columns %}
        {% do hashable.append(joinery._comparable_sql(joinery._quote_identifier(column.name), column.dtype)) %}
    {% endfor %}
    {% do ordering.append('xxhash64(' ~ hashable | join(', ') ~ ') desc') %}
    {{ return(ordering) }}
{% endmacro %}


{% macro _changelog_state_row_checks(changelog, key_columns, loaded_at_column, operation_check) %}
    {#- Rows that would make the state wrong stop the run with a message instead of vanishing. -#}
    {% set checks = [] %}
    {% for column in key_columns %}
        {% do checks.append(joinery._fail_when_sql(
            joinery._quote_identifier(column) ~ ' is null',
            joinery._sql_string('joinery.changelog_state: a changelog row of ' ~ changelog
            ~ ' has a NULL key column ' ~ column
            ~ '; fix the row or filter it out before the changelog reaches changelog_state'))) %}
    {% endfor %}
    {% if loaded_at_column %}
        {% do checks.append(joinery._fail_when_sql(
            joinery._quote_identifier(loaded_at_column) ~ ' is null',
            joinery._sql_string('joinery.changelog_state: a changelog row of ' ~ changelog
            ~ ' has a NULL loaded_at (' ~ loaded_at_column ~ '); incremental runs could never read it'))) %}
    {% endif %}
    {% if operation_check %}
        {% do checks.append(operation_check) %}
    {% endif %}
    {{ return(checks) }}
{% endmacro %}


{% macro _changelog_state_watermark(columns, loaded_at_column) %}
    {#- The state's watermark, read before the run and written into the query as a literal: a
        filter on a literal reaches the changelog's parquet scan, which then skips the row groups of
        batches already consumed (a watermark joined in from a subquery cannot). -#}
    {% set newest = run_query('select cast(max(_joinery_changed_at) as string) from ' ~ this).rows[0][0] %}
    {% if newest is none %}
        {{ return(none) }}
    {% endif %}
    {% set loaded_type = (columns | selectattr('name', 'equalto', loaded_at_column) | first).dtype %}
    {{ return(joinery._typed_literal(newest, loaded_type)) }}
{% endmacro %}


{% macro _changelog_state_deleted_expression(changelog, deleted) %}
    {#- `deleted` is a documented SQL expression over the changelog's columns; it must be boolean. -#}
    {% if deleted is not string or deleted | trim == '' or ';' in deleted %}
        {{ joinery._raise_argument_error('changelog_state', 'deleted', deleted,
            "expected a boolean SQL expression over the changelog's columns, e.g. \"op = 'd'\" (use 'false' when the changelog has no deletes)") }}
    {% endif %}
    {% set deleted = joinery._sql_expression(deleted) %}
    {% if execute %}
        {% set described = run_query('describe query select (' ~ deleted ~ ') as deleted_marker from ' ~ changelog) %}
        {% set marker_type = described.columns[1].values()[0] | lower %}
        {% if marker_type != 'boolean' %}
            {{ joinery._raise_argument_error('changelog_state', 'deleted', deleted,
                'expected a boolean SQL expression over the changelog\'s columns, but it has type ' ~ marker_type
                ~ "; compare it with the delete value, e.g. \"op = 'd'\"") }}
        {% endif %}
    {% endif %}
    {{ return(deleted) }}
{% endmacro %}


{% macro _changelog_state_operation_check(changelog, operation, operation_values, available) %}
    {#- Optional: the column holding the operation (c/u/d/r, insert/update/delete, ...) and its
        allowed values. A row with any other value, or NULL, stops the run naming the value. Without
        it, every row whose `deleted` expression is not true is an upsert, whatever its operation. -#}
    {% if operation is none and operation_values is none %}
        {{ return(none) }}
    {% endif %}
    {% if operation is none or operation_values is none %}
        {{ joinery._raise_argument_error('changelog_state', 'operation' if operation is none else 'operation_values',
            none, 'operation and operation_values go together: the operation column and the list of its allowed values') }}
    {% endif %}
    {% set column = joinery._column_argument(changelog, operation, 'operation', 'changelog_state', available) %}
    {% if column | length != 1 %}
        {{ joinery._raise_argument_error('changelog_state', 'operation', operation, 'expected one column name') }}
    {% endif %}
    {% set values = joinery._as_list(operation_values, 'operation_values', 'changelog_state') %}
    {% set literals = [] %}
    {% for value in values %}
        {% if value is string %}
            {% do literals.append(joinery._sql_string(value)) %}
        {% elif value is number and value is not boolean %}
            {% do literals.append(value | string) %}
        {% else %}
            {{ joinery._raise_argument_error('changelog_state', 'operation_values', operation_values,
                'expected a list of strings or numbers') }}
        {% endif %}
    {% endfor %}
    {% set quoted = joinery._quote_identifier(column[0]) %}
    {{ return(joinery._fail_when_sql(
        quoted ~ ' is null or ' ~ quoted ~ ' not in (' ~ literals | join(', ') ~ ')',
        "concat('joinery.changelog_state: unknown operation value ', coalesce(cast(" ~ quoted
        ~ " as string), 'NULL'), " ~ joinery._sql_string(' in column ' ~ column[0] ~ ' of ' ~ changelog
        ~ '; allowed: ' ~ values | join(', ') ~ ' (argument operation_values)') ~ ")")) }}
{% endmacro %}
