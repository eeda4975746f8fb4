{#- fk_join: the foreign-key join of two changelog_state models (seed document 003, Kafka KIP-213),
    keyed by the left key. Tombstoned state rows count as absent; a NULL foreign key never matches.
    Full form: the join of the two states. Incremental form (a joinery_upsert model): only the left
    keys affected by state changes the result has not seen yet are recomputed, and only those whose
    result differs from the stored one are emitted, as upserts or deletes (the model's deleted_column). -#}

{% macro fk_join(left, right, left_key=none, foreign_key=none, right_key=none, join_type='inner',
    left_columns=none, right_columns=none) %}
    {{ return(adapter.dispatch('fk_join', 'joinery')(left, right, left_key, foreign_key, right_key, join_type,
        left_columns, right_columns)) }}
{% endmacro %}


{% macro default__fk_join(left, right, left_key=none, foreign_key=none, right_key=none, join_type='inner',
    left_columns=none, right_columns=none) %}
    {% set plan = joinery.fk_join_plan(left, right, left_key, foreign_key, right_key, join_type, left_columns,
        right_columns) %}
    {% if not plan %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% if not joinery.fk_join_incremental_run() %}
        {{ return(joinery.fk_join_full_sql(left, right, plan)) }}
    {% elif config.get('materialized') == 'joinery_upsert'
            and (config.get('file_format') or '') | lower == 'delta' %}
        {{ return(joinery.fk_join_affected_sql(left, right, plan)) }}
    {% endif %}
    {{ return(joinery.fk_join_incremental_sql(left, right, plan)) }}
{% endmacro %}


{% macro fk_join_plan(left, right, left_key, foreign_key, right_key, join_type, left_columns, right_columns) %}
    {#- The validated arguments: keys, the output columns [{side, column, name}] and their types
        ({name: dtype}). Empty at parse time, when the states cannot be described. -#}
    {% set macro_name = 'fk_join' %}
    {% if join_type not in ['inner', 'left'] %}
        {{ joinery.raise_argument_error(macro_name, 'join_type', join_type, "expected 'inner' or 'left'") }}
    {% endif %}
    {% for argument, relation in [('left', left), ('right', right)] %}
        {% if relation is none or relation is string %}
            {{ joinery.raise_argument_error(macro_name, argument, relation | string,
                'expected a changelog_state model: ref() or source()') }}
        {% endif %}
    {% endfor %}
    {#- One `describe` per state for every check below (empty at parse time). -#}
    {% set left_described = joinery.columns_of(left) %}
    {% set right_described = joinery.columns_of(right) %}
    {% set left_names = left_described | map(attribute='name') | list %}
    {% set right_names = right_described | map(attribute='name') | list %}
    {#- The result is keyed by left_key: it defaults to the model's unique_key and must match it. -#}
    {% set left_keys = joinery.column_argument(left, joinery.upsert_key_argument(left_key, macro_name, 'left_key'),
        'left_key', macro_name, left_names) %}
    {% set foreign_keys = joinery.column_argument(left, foreign_key, 'foreign_key', macro_name, left_names) %}
    {% set right_keys = joinery.column_argument(right, right_key, 'right_key', macro_name, right_names) %}
    {% if foreign_keys | length != right_keys | length %}
        {{ joinery.raise_argument_error(macro_name, 'foreign_key', foreign_key,
            'expected as many columns as right_key ' ~ tojson(right_key) ~ ' (they match positionally)') }}
    {% endif %}
    {% if not execute %}
        {{ return({}) }}
    {% endif %}
    {% do joinery.fk_join_require_state(left, 'left', left_names) %}
    {% do joinery.fk_join_require_state(right, 'right', right_names) %}
    {% do joinery.fk_join_check_key_types(left, foreign_keys, right, right_keys, left_described, right_described) %}
    {% set outputs = joinery.fk_join_output_specs(left, right, left_keys, right_keys, left_columns, right_columns,
        left_names, right_names) %}
    {{ return({'join_type': join_type, 'left_keys': left_keys, 'foreign_keys': foreign_keys, 'right_keys': right_keys,
        'outputs': outputs, 'value_types': joinery.fk_join_value_types(outputs, left_described, right_described)}) }}
{% endmacro %}


{% macro fk_join_output_specs(left, right, left_keys, right_keys, left_columns, right_columns, left_names,
    right_names) %}
    {#- [{side, column, name}]: the left keys, then each side's outputs; fails on clashing names. -#}
    {% set left_outputs = joinery.fk_join_outputs(left, left_columns, left_keys, 'left_columns', left_names) %}
    {% set right_outputs = joinery.fk_join_outputs(right, right_columns, right_keys, 'right_columns', right_names) %}
    {% set outputs = [] %}
    {% for column in left_keys %}
        {% do outputs.append({'side': 'left_state', 'column': column, 'name': column}) %}
    {% endfor %}
    {% for output in left_outputs %}
        {% do outputs.append({'side': 'left_state', 'column': output[0], 'name': output[1]}) %}
    {% endfor %}
    {% for output in right_outputs %}
        {% do outputs.append({'side': 'right_state', 'column': output[0], 'name': output[1]}) %}
    {% endfor %}
    {% do joinery.fk_join_check_output_names(outputs) %}
    {% do joinery.upsert_check_marker_clash(outputs | map(attribute='name') | list, 'fk_join') %}
    {{ return(outputs) }}
{% endmacro %}


{% macro fk_join_value_types(outputs, left_described, right_described) %}
    {#- {output name: Spark type}, for comparing a recomputed value with the stored one exactly. -#}
    {% set described_types = {'left_state': {}, 'right_state': {}} %}
    {% for column in left_described %}
        {% do described_types['left_state'].update({column.name: column.dtype}) %}
    {% endfor %}
    {% for column in right_described %}
        {% do described_types['right_state'].update({column.name: column.dtype}) %}
    {% endfor %}
    {% set value_types = {} %}
    {% for output in outputs %}
        {% do value_types.update({output.name: described_types[output.side][output.column]}) %}
    {% endfor %}
    {{ return(value_types) }}
{% endmacro %}


{% macro fk_join_select_list(outputs) %}
    {#- The joined row's columns: the outputs, then the arrival of each side's state version. -#}
    {% set select_list = [] %}
    {% for output in outputs %}
        {% do select_list.append(output.side ~ '.' ~ joinery.quote_identifier(output.column) ~ ' as '
            ~ joinery.quote_identifier(output.name)) %}
    {% endfor %}
    {% do select_list.append('left_state._joinery_changed_at as _joinery_left_changed_at') %}
    {% do select_list.append('right_state._joinery_changed_at as _joinery_right_changed_at') %}
    {{ return(select_list) }}
{% endmacro %}


{% macro fk_join_full_sql(left, right, plan) %}
    {#- The first run or a full refresh: the join of the two states' live rows. -#}
    {% set join_sql %}
    with

    {{ joinery.fk_join_live_state_ctes(left, right) }}

    {{ joinery.fk_join_live_join_sql(plan) }}
    {%- endset %}
    {{ return(join_sql) }}
{% endmacro %}


{% macro fk_join_live_state_ctes(left_rows, right) %}
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


{% macro fk_join_live_join_sql(plan) %}
    {#- The join of left_state and right_state, one row per result with the plan's outputs: the
        whole first run, and the recomputed results of an incremental one. -#}
    select
        {{ joinery.fk_join_select_list(plan.outputs) | join(',\n        ') }}
    from left_state
    {{ plan.join_type }} join right_state
        on {{ joinery.fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_state') }}
{%- endmacro %}


{% macro fk_join_incremental_sql(left, right, plan) %}
    {#- An incremental run: the affected left keys' new results, compared with their stored ones. -#}
    {% set value_names = plan.outputs | map(attribute='name') | reject('in', plan.left_keys) | list %}
    {% set first_key = joinery.quote_identifier(plan.left_keys[0]) %}
    {% set incremental_sql %}
    with

    {{ joinery.fk_join_affected_ctes(left, right, plan) }},

    {{ joinery.fk_join_live_state_ctes('affected_left', right) }},

    recomputed as (
        {{ joinery.fk_join_live_join_sql(plan) | indent(4) }}
    ),

    previous_affected as (
        select previous_result.*
        from previous_result
        left semi join affected_left
            on {{ joinery.fk_join_key_match(plan.left_keys, plan.left_keys, 'previous_result', 'affected_left') }}
    )

    {#- One full join of the new and the stored results of the affected keys gives both kinds of
        change: a key with no new result is a delete, and a key whose new result differs from the
        stored one (or has none stored) an upsert. Rows whose result is unchanged are not emitted: an
        unchanged re-publish changes nothing, and a re-run over changes already applied yields no
        row at all. One join rather than an upsert branch and a delete branch: Spark inlines a CTE
        at each use, so two branches would compute the affected keys four times and read the stored
        result twice. A delete's value columns are NULL: joinery_upsert reads only its key. -#}
    select
        {{ joinery.fk_join_output_columns(plan) | join(',\n        ') }},
        recomputed._joinery_left_changed_at,
        recomputed._joinery_right_changed_at,
        recomputed.{{ first_key }} is null as {{ joinery.quote_identifier(joinery.upsert_marker_column()) }}
    from recomputed
    full join previous_affected
        on {{ joinery.fk_join_key_match(plan.left_keys, plan.left_keys, 'previous_affected', 'recomputed') }}
    where
        recomputed.{{ first_key }} is null
        or previous_affected.{{ first_key }} is null
        {% for name in value_names -%}
        or not ({{ joinery.same_value_sql('recomputed.' ~ joinery.quote_identifier(name),
            'previous_affected.' ~ joinery.quote_identifier(name), plan.value_types[name]) }})
        {% endfor %}
    {%- endset %}
    {{ return(incremental_sql) }}
{% endmacro %}


{% macro fk_join_affected_sql(left, right, plan) %}
    {#- An incremental run into a delta table: the new result of every affected left key,
        from one pass over the left state joined to the right state (each state read once, the
        stored result only for its two watermarks). A key with no result is a delete (the model's
        deleted_column). joinery_upsert's MERGE leaves a stored row equal to its new one as it is
        and deletes only keys it holds, and on delta a MERGE that changes nothing commits nothing,
        so unchanged results and deletes of absent keys cost nothing there. Other formats take
        fk_join_incremental_sql, which emits only the results that changed (docs/fk_join.md, "What
        a batch costs"). -#}
    {% set right_live = 'coalesce(not right_rows._joinery_tombstone, false)' %}
    {% set columns = [] %}
    {% for output in plan.outputs %}
        {% set column = joinery.quote_identifier(output.column) %}
        {% do columns.append(('left_state.' ~ column if output.side == 'left_state' else 'if(' ~ right_live
            ~ ', right_rows.' ~ column ~ ', null)') ~ ' as ' ~ joinery.quote_identifier(output.name)) %}
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
            as {{ joinery.quote_identifier(joinery.upsert_marker_column()) }}
    from {{ left }} as left_state
    cross join watermark
    left join right_rows
        on {{ joinery.fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_rows') }}
    where
        watermark.left_watermark is null
        or left_state._joinery_changed_at is null
        or left_state._joinery_changed_at > watermark.left_watermark
        or coalesce(right_rows._joinery_right_changed, false)
    {%- endset %}
    {{ return(affected_sql) }}
{% endmacro %}


{% macro fk_join_output_columns(plan) %}
    {#- The incremental run's columns: a key from whichever side has it, the rest from the new result. -#}
    {% set output_columns = [] %}
    {% for output in plan.outputs %}
        {% set quoted = joinery.quote_identifier(output.name) %}
        {% if output.name in plan.left_keys %}
            {% do output_columns.append('coalesce(recomputed.' ~ quoted ~ ', previous_affected.' ~ quoted ~ ') as '
                ~ quoted) %}
        {% else %}
            {% do output_columns.append('recomputed.' ~ quoted) %}
        {% endif %}
    {% endfor %}
    {{ return(output_columns) }}
{% endmacro %}


{% macro fk_join_affected_ctes(left, right, plan) %}
    {#- The stored result, its two watermarks, and the left state rows whose result may have changed
        since (affected_left), as CTEs for fk_join_incremental_sql.
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
        select distinct {{ joinery.quoted_column_list(plan.right_keys, 'right_state') }}
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
        from {{ left }} as left_state
        cross join watermark
        left join right_changes
            on {{ joinery.fk_join_key_match(plan.foreign_keys, plan.right_keys, 'left_state', 'right_changes') }}
        where
            watermark.left_watermark is null
            or left_state._joinery_changed_at is null
            or left_state._joinery_changed_at > watermark.left_watermark
            or right_changes.{{ joinery.quote_identifier(plan.right_keys[0]) }} is not null
    )
    {%- endset %}
    {{ return(affected_ctes) }}
{% endmacro %}


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
        {{ joinery.raise_argument_error(macro_name, 'result', result | string,
            'expected the fk_join model: ref()') }}
    {% endif %}
    {% set result_columns = joinery.columns_of(result) %}
    {% set result_names = result_columns | map(attribute='name') | list %}
    {% set keys = joinery.column_argument(result, joinery.upsert_key_argument(key, macro_name), 'key', macro_name,
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
    {% if joinery.fk_join_incremental_run() %}
        {{ return(joinery.fk_join_changes_incremental_sql(result, keys, values, value_types)) }}
    {% endif %}
    {% set changes_sql %}
    with

    changes as (
        select
            {{ joinery.quoted_column_list(keys + values) }},
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


{% macro fk_join_changes_incremental_sql(result, keys, values, value_types) %}
    {#- A run after the first: the result's keys whose value differs from their newest logged value
        (upserts), and the logged keys that have no result any more (tombstones), as run N + 1. -#}
    {% set key_match = joinery.fk_join_key_match(keys, keys, 'current_result', 'latest_logged') %}
    {% set changes_sql %}
    with

    current_result as (
        select {{ joinery.quoted_column_list(keys + values) }}
        from {{ result }}
    ),

    change_log as (
        select * from {{ this }}
    ),

    previous_run as (
        select coalesce(max(_joinery_run), 0) as last_run from change_log
    ),

    latest_logged as (
        select *
        from (
            select
                *,
                row_number() over (
                    partition by {{ joinery.quoted_column_list(keys) }} order by _joinery_run desc
                ) as _joinery_rank
            from change_log
        ) as ranked
        where _joinery_rank = 1 and not _joinery_tombstone
    ),

    upserts as (
        select
            {{ joinery.quoted_column_list(keys + values, 'current_result') }},
            false as _joinery_tombstone
        from current_result
        left join latest_logged
            on {{ key_match }}
        where
            latest_logged.{{ joinery.quote_identifier(keys[0]) }} is null
            {% for name in values -%}
            or not ({{ joinery.same_value_sql('current_result.' ~ joinery.quote_identifier(name),
                'latest_logged.' ~ joinery.quote_identifier(name), value_types[name]) }})
            {% endfor %}
    ),

    tombstones as (
        select
            {{ joinery.quoted_column_list(keys, 'latest_logged') }},
            {% for name in values -%}
            {#- NULL of the column's own type. -#}
            if(false, latest_logged.{{ joinery.quote_identifier(name) }}, null) as {{ joinery.quote_identifier(name) }},
            {% endfor -%}
            true as _joinery_tombstone
        from latest_logged
        left anti join current_result
            on {{ key_match }}
    ),

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


{#- Helpers shared by changelog_state and fk_join. -#}


{% macro fk_join_key_match(left_columns, right_columns, left_alias, right_alias) %}
    {{ return(joinery.key_match(left_columns, left_alias, right_alias, right_keys=right_columns, null_safe=false)) }}
{% endmacro %}


{% macro fk_join_incremental_run() %}
    {#- True when the calling model applies changes to an existing table: a joinery_upsert model
        (joinery.is_incremental()) or a dbt incremental model (is_incremental()). -#}
    {% if not execute %}
        {{ return(false) }}
    {% endif %}
    {% set materialized = config.get('materialized') %}
    {% if materialized == 'joinery_upsert' %}
        {{ return(joinery.is_incremental()) }}
    {% elif materialized == 'incremental' %}
        {{ return(dbt.is_incremental()) }}
    {% endif %}
    {{ return(false) }}
{% endmacro %}


{% macro fk_join_require_state(relation, argument, names) %}
    {#- `names`: the relation's column names, read once by the caller. -#}
    {% for needed in ['_joinery_tombstone', '_joinery_changed_at'] if joinery.find_column(names, needed) is none %}
        {{ joinery.raise_argument_error('fk_join', argument, relation | string,
            'expected a changelog_state model (with columns _joinery_tombstone and _joinery_changed_at); '
            ~ 'its columns are ' ~ tojson(names)) }}
    {% endfor %}
{% endmacro %}


{% macro fk_join_type_family(dtype) %}
    {% set dtype = dtype | lower %}
    {% set numeric = ['tinyint', 'smallint', 'int', 'integer', 'bigint', 'float', 'double'] %}
    {% if dtype in numeric or dtype.startswith('decimal') %}
        {{ return('number') }}
    {% elif dtype == 'string' or dtype.startswith('varchar') or dtype.startswith('char') %}
        {{ return('string') }}
    {% endif %}
    {{ return(dtype) }}
{% endmacro %}


{% macro fk_join_check_key_types(left, foreign_keys, right, right_keys, left_described, right_described) %}
    {#- Spark would compare a string foreign key with a numeric key by casting, which fails on bad
        data under ANSI or silently never matches: mismatched kinds are a compile error instead.
        `left_described` / `right_described`: the states' columns, read once by the caller. -#}
    {% set left_types = {} %}
    {% for column in left_described %}
        {% do left_types.update({column.name | lower: column.dtype}) %}
    {% endfor %}
    {% set right_types = {} %}
    {% for column in right_described %}
        {% do right_types.update({column.name | lower: column.dtype}) %}
    {% endfor %}
    {% for foreign in foreign_keys %}
        {% set left_type = left_types[foreign | lower] %}
        {% set right_type = right_types[right_keys[loop.index0] | lower] %}
        {% if joinery.fk_join_type_family(left_type) != joinery.fk_join_type_family(right_type) %}
            {{ joinery.raise_argument_error('fk_join', 'foreign_key', foreign,
                'its type ' ~ left_type ~ ' in ' ~ left ~ ' does not match the type ' ~ right_type ~ ' of right_key '
                ~ right_keys[loop.index0] ~ ' in ' ~ right ~ '; cast one side in the changelog or its state model') }}
        {% endif %}
    {% endfor %}
{% endmacro %}


{% macro fk_join_outputs(relation, requested, keys, argument, available) %}
    {#- [(column, output name)] for one side: `requested` is a list of columns, or a mapping
        {column: output name}; by default every column except the keys and joinery's own.
        `available`: the side's column names, read once by the caller. -#}
    {% set pairs = [] %}
    {% if requested is none %}
        {% for name in available
            if not name | lower is in(keys | map('lower') | list) and not (name | lower).startswith('_joinery_') %}
            {% do pairs.append((name, name)) %}
        {% endfor %}
    {% elif requested is mapping %}
        {% set found = joinery.require_columns(relation, requested.keys() | list, argument, 'fk_join', available) %}
        {% for column, output in requested.items() %}
            {% do pairs.append((found[loop.index0], joinery.validate_identifier(output, argument, 'fk_join'))) %}
        {% endfor %}
    {% else %}
        {% set found = joinery.column_argument(relation, requested, argument, 'fk_join', available) %}
        {% for name in found if not name | lower is in(keys | map('lower') | list) or argument == 'right_columns' %}
            {% do pairs.append((name, name)) %}
        {% endfor %}
    {% endif %}
    {{ return(pairs) }}
{% endmacro %}


{% macro fk_join_check_output_names(outputs) %}
    {% set seen = {} %}
    {% set clashes = [] %}
    {% for output in outputs %}
        {% set name = output.name | lower %}
        {% if name.startswith('_joinery_') %}
            {% set argument = 'left_columns' if output.side == 'left_state' else 'right_columns' %}
            {{ joinery.raise_argument_error('fk_join', argument, output.name,
                'output names starting with _joinery_ are reserved for joinery') }}
        {% endif %}
        {% if name in seen %}
            {% do clashes.append(seen[name] ~ ' and ' ~ output.side | replace('_state', '') ~ '.' ~ output.column
                ~ ' are both named ' ~ output.name) %}
        {% else %}
            {% do seen.update({name: output.side | replace('_state', '') ~ '.' ~ output.column}) %}
        {% endif %}
    {% endfor %}
    {% if clashes %}
        {{ joinery.raise_argument_error('fk_join', 'right_columns', clashes,
            'output column names must be unique: pick columns with left_columns / right_columns, or rename '
            ~ 'them with a mapping, e.g. right_columns={"name": "customer_name"}') }}
    {% endif %}
{% endmacro %}
