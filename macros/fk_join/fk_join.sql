{#- fk_join: the foreign-key join of two changelog_state models (seed document 003, Kafka KIP-213),
    keyed by the left key. Tombstoned state rows count as absent; a NULL foreign key never matches.
    Full form: the join of the two states. Incremental form (a joinery_upsert model): only the left
    keys affected by state changes the result has not seen yet are recomputed, and only those whose
    result differs from the stored one are emitted, as upserts or deletes (the model's deleted_column).
    This file: the public macro, its plan and the checks of its arguments; the SQL is built in
    fk_join_live_join.sql (first run) and fk_join_incremental.sql (incremental runs). -#}

{% macro fk_join(left, right, left_key=none, foreign_key=none, right_key=none, join_type='inner',
    left_columns=none, right_columns=none, change_feed=false) %}
    {{ return(adapter.dispatch('fk_join', 'joinery')(left, right, left_key, foreign_key, right_key, join_type,
        left_columns, right_columns, change_feed)) }}
{% endmacro %}


{% macro default__fk_join(left, right, left_key=none, foreign_key=none, right_key=none, join_type='inner',
    left_columns=none, right_columns=none, change_feed=false) %}
    {% if change_feed is not boolean %}
        {{ joinery._raise_argument_error('fk_join', 'change_feed', change_feed, 'expected true or false') }}
    {% endif %}
    {% set plan = joinery._fk_join_plan(left, right, left_key, foreign_key, right_key, join_type, left_columns,
        right_columns, change_feed) %}
    {% if not plan %}
        {{ return('select 1 as joinery_unresolved') }}
    {% elif change_feed %}
        {{ return(joinery._fk_join_feed_sql(left, right, plan)) }}
    {% endif %}
    {% if not joinery._fk_join_incremental_run() %}
        {{ return(joinery._fk_join_full_sql(left, right, plan)) }}
    {% elif config.get('materialized') == 'joinery_upsert'
            and (config.get('file_format') or '') | lower == 'delta' %}
        {{ return(joinery._fk_join_affected_sql(left, right, plan)) }}
    {% endif %}
    {{ return(joinery._fk_join_incremental_sql(left, right, plan)) }}
{% endmacro %}


{% macro _fk_join_plan(left, right, left_key, foreign_key, right_key, join_type, left_columns, right_columns,
    change_feed=false) %}
    {#- The validated arguments: keys, the output columns [{side, column, name}] and their types
        ({name: dtype}). Empty at parse time, when the states cannot be described. -#}
    {% set macro_name = 'fk_join' %}
    {% if join_type not in ['inner', 'left'] %}
        {{ joinery._raise_argument_error(macro_name, 'join_type', join_type, "expected 'inner' or 'left'") }}
    {% endif %}
    {% for argument, relation in [('left', left), ('right', right)] %}
        {% if relation is none or relation is string %}
            {{ joinery._raise_argument_error(macro_name, argument, relation | string,
                'expected a changelog_state model (or with change_feed=true a Delta table): ref() or source()') }}
        {% endif %}
    {% endfor %}
    {#- One `describe` per state for every check below (empty at parse time). -#}
    {% set left_described = joinery._columns_of(left) %}
    {% set right_described = joinery._columns_of(right) %}
    {% set left_names = left_described | map(attribute='name') | list %}
    {% set right_names = right_described | map(attribute='name') | list %}
    {#- The result is keyed by left_key: it defaults to the model's unique_key and must match it. -#}
    {% set left_keys = joinery._column_argument(left, joinery.upsert_key_argument(left_key, macro_name, 'left_key'),
        'left_key', macro_name, left_names) %}
    {% set foreign_keys = joinery._column_argument(left, foreign_key, 'foreign_key', macro_name, left_names) %}
    {% set right_keys = joinery._column_argument(right, right_key, 'right_key', macro_name, right_names) %}
    {% if foreign_keys | length != right_keys | length %}
        {{ joinery._raise_argument_error(macro_name, 'foreign_key', foreign_key,
            'expected as many columns as right_key ' ~ tojson(right_key) ~ ' (they match positionally)') }}
    {% endif %}
    {% if not execute %}
        {{ return({}) }}
    {% endif %}
    {% if change_feed %}
        {% do joinery._change_feed_check_model('left', left, left_names, 'fk_join') %}
        {% do joinery._change_feed_check_model('right', right, right_names, 'fk_join') %}
    {% else %}
        {% do joinery._fk_join_require_state(left, 'left', left_names) %}
        {% do joinery._fk_join_require_state(right, 'right', right_names) %}
    {% endif %}
    {% do joinery._fk_join_check_key_types(left, foreign_keys, right, right_keys, left_described, right_described) %}
    {% set outputs = joinery._fk_join_output_specs(left, right, left_keys, right_keys, left_columns, right_columns,
        left_names, right_names) %}
    {{ return({'join_type': join_type, 'left_keys': left_keys, 'foreign_keys': foreign_keys, 'right_keys': right_keys,
        'outputs': outputs, 'value_types': joinery._fk_join_value_types(outputs, left_described, right_described)}) }}
{% endmacro %}


{% macro _fk_join_output_specs(left, right, left_keys, right_keys, left_columns, right_columns, left_names,
    right_names) %}
    {#- [{side, column, name}]: the left keys, then each side's outputs; fails on clashing names. -#}
    {% set left_outputs = joinery._fk_join_outputs(left, left_columns, left_keys, 'left_columns', left_names) %}
    {% set right_outputs = joinery._fk_join_outputs(right, right_columns, right_keys, 'right_columns', right_names) %}
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
    {% do joinery._fk_join_check_output_names(outputs) %}
    {% do joinery.upsert_check_marker_clash(outputs | map(attribute='name') | list, 'fk_join') %}
    {{ return(outputs) }}
{% endmacro %}


{% macro _fk_join_value_types(outputs, left_described, right_described) %}
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


{% macro _fk_join_require_state(relation, argument, names) %}
    {#- `names`: the relation's column names, read once by the caller. -#}
    {% for needed in ['_joinery_tombstone', '_joinery_changed_at'] if joinery._find_column(names, needed) is none %}
        {{ joinery._raise_argument_error('fk_join', argument, relation | string,
            'expected a changelog_state model (with columns _joinery_tombstone and _joinery_changed_at); '
            ~ 'its columns are ' ~ tojson(names)) }}
    {% endfor %}
{% endmacro %}


{% macro _fk_join_type_family(dtype) %}
    {% set dtype = dtype | lower %}
    {% set numeric = ['tinyint', 'smallint', 'int', 'integer', 'bigint', 'float', 'double'] %}
    {% if dtype in numeric or dtype.startswith('decimal') %}
        {{ return('number') }}
    {% elif dtype == 'string' or dtype.startswith('varchar') or dtype.startswith('char') %}
        {{ return('string') }}
    {% endif %}
    {{ return(dtype) }}
{% endmacro %}


{% macro _fk_join_check_key_types(left, foreign_keys, right, right_keys, left_described, right_described) %}
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
        {% if joinery._fk_join_type_family(left_type) != joinery._fk_join_type_family(right_type) %}
            {{ joinery._raise_argument_error('fk_join', 'foreign_key', foreign,
                'its type ' ~ left_type ~ ' in ' ~ left ~ ' does not match the type ' ~ right_type ~ ' of right_key '
                ~ right_keys[loop.index0] ~ ' in ' ~ right ~ '; cast one side in the changelog or its state model') }}
        {% endif %}
    {% endfor %}
{% endmacro %}


{% macro _fk_join_outputs(relation, requested, keys, argument, available) %}
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
        {% set found = joinery._require_columns(relation, requested.keys() | list, argument, 'fk_join', available) %}
        {% for column, output in requested.items() %}
            {% do pairs.append((found[loop.index0], joinery._validate_identifier(output, argument, 'fk_join'))) %}
        {% endfor %}
    {% else %}
        {% set found = joinery._column_argument(relation, requested, argument, 'fk_join', available) %}
        {% for name in found if not name | lower is in(keys | map('lower') | list) or argument == 'right_columns' %}
            {% do pairs.append((name, name)) %}
        {% endfor %}
    {% endif %}
    {{ return(pairs) }}
{% endmacro %}


{% macro _fk_join_check_output_names(outputs) %}
    {% set seen = {} %}
    {% set clashes = [] %}
    {% for output in outputs %}
        {% set name = output.name | lower %}
        {% if name.startswith('_joinery_') %}
            {% set argument = 'left_columns' if output.side == 'left_state' else 'right_columns' %}
            {{ joinery._raise_argument_error('fk_join', argument, output.name,
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
        {{ joinery._raise_argument_error('fk_join', 'right_columns', clashes,
            'output column names must be unique: pick columns with left_columns / right_columns, or rename '
            ~ 'them with a mapping, e.g. right_columns={"name": "customer_name"}') }}
    {% endif %}
{% endmacro %}
