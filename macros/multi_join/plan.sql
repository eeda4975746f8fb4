{#- The Hydrator joiner's checks and output schema, shared by `multi_join` (which renders the SQL)
    and `describe_join` (which prints the schemas). Every argument is validated here, so both fail
    with the same messages. Callers run it only when `execute` is true (column checks need the
    inputs' columns); without `execute` it checks what it can and the plan has no output columns.
    This file holds the plan; the checks of the inputs, join type, hints, strategy and null_keys are
    in arguments.sql, the join keys in keys.sql, the output columns in outputs.sql. -#}

{% macro _multi_join_plan(inputs, keys, join_type='inner', required=none, select=none, rename=none, drop=none,
                         qualify=false, hints=none, full_join_plan='chain', null_keys='distinct',
                         macro_name='multi_join') %}
    {% set names = joinery._multi_join_check_inputs(inputs, macro_name) %}
    {% set required_inputs = joinery._multi_join_required_inputs(names, join_type, required, macro_name) %}
    {#- every input's columns (_columns_of stops on an input that does not exist) -#}
    {% set input_columns = {} %}
    {% for name in names if execute %}
        {% do input_columns.update({name: joinery._columns_of(inputs[name])}) %}
    {% endfor %}
    {% set key_lists = joinery._multi_join_key_lists(inputs, names, keys, join_type, input_columns, macro_name) %}
    {% set hint_map = joinery._multi_join_check_hints(hints, names, macro_name) %}
    {% set strategy = joinery._multi_join_strategy(join_type, required_inputs, full_join_plan, macro_name) %}
    {% do joinery._multi_join_check_null_keys(null_keys, join_type, macro_name) %}
    {% if strategy == 'grouped' and hint_map %}
        {% do joinery._raise_argument_error(macro_name, 'hints', hints,
            "full_join_plan='grouped' runs as one grouped pass with no join to hint") %}
    {% endif %}

    {% set plan = {
        'macro_name': macro_name, 'names': names, 'relations': inputs, 'keys': key_lists,
        'join_type': join_type, 'required': required_inputs, 'strategy': strategy,
        'driver': required_inputs[0] if required_inputs else names[0], 'hints': hint_map,
        'columns': input_columns, 'outputs': [], 'qualify': qualify, 'null_keys': null_keys} %}

    {% if qualify is not boolean %}
        {% do joinery._raise_argument_error(macro_name, 'qualify', qualify, 'expected true or false') %}
    {% endif %}
    {% if select is not none and drop is not none %}
        {% do joinery._raise_argument_error(macro_name, 'drop', drop,
            '`select` already lists every output column; give `select` or `drop`, not both') %}
    {% endif %}
    {% if rename is not none and rename is not mapping %}
        {% do joinery._raise_argument_error(macro_name, 'rename', rename,
            "expected a mapping of 'input.column' to a new name") %}
    {% endif %}

    {% if not execute %}
        {{ return(plan) }}
    {% endif %}

    {% do plan.update({'outputs': joinery._multi_join_outputs(plan, select, rename, drop, qualify)}) %}
    {{ return(plan) }}
{% endmacro %}
