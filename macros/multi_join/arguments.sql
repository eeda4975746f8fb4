{#- multi_join's argument checks (plan.sql runs them): the inputs, the join type and its required
    inputs, the hints, the SQL strategy and null_keys. Each fails with a message naming the argument. -#}

{% macro _multi_join_check_inputs(inputs, macro_name) %}
    {#- The input names, in order, once `inputs` is checked: 2+ distinct identifiers of relations. -#}
    {% if inputs is not mapping or inputs | length < 2 %}
        {% do joinery._raise_argument_error(macro_name, 'inputs',
            inputs | string if inputs is not mapping else inputs | list,
            'expected a mapping of 2 or more input names to relations, e.g. '
            ~ "{'customers': ref('customers'), 'purchases': ref('purchases')}") %}
    {% endif %}
    {% set names = inputs | list %}
    {% for name in names %}
        {% do joinery._validate_identifier(name, 'inputs', macro_name) %}
        {% if inputs[name] is string or inputs[name] is none or inputs[name].render is not defined %}
            {% do joinery._raise_argument_error(macro_name, 'inputs', {name: inputs[name] | string},
                'expected a relation for input `' ~ name ~ '`: ref(), source() or api.Relation.create()') %}
        {% endif %}
    {% endfor %}
    {% set lowered = names | map('lower') | list %}
    {% if lowered | unique | list | length != names | length %}
        {% do joinery._raise_argument_error(macro_name, 'inputs', names,
            'input names must differ (ignoring case), they become table aliases') %}
    {% endif %}
    {% if 'join_key' in lowered %}
        {% do joinery._raise_argument_error(macro_name, 'inputs', names,
            '`join_key` is reserved: `join_key.<column>` names the join key in select, rename and drop; '
            ~ 'name the input otherwise') %}
    {% endif %}
    {{ return(names) }}
{% endmacro %}


{% macro _multi_join_required_inputs(names, join_type, required, macro_name) %}
    {#- The inputs every output row must come from, in input order, by join_type (and `required`
        for an outer join). -#}
    {% set join_types = ['inner', 'left', 'right', 'full', 'outer', 'cross'] %}
    {% if join_type not in join_types %}
        {% do joinery._raise_argument_error(macro_name, 'join_type', join_type,
            'expected one of ' ~ tojson(join_types)) %}
    {% endif %}
    {% if required is not none and join_type != 'outer' %}
        {% do joinery._raise_argument_error(macro_name, 'required', required,
            "`required` applies only to join_type='outer' (inner requires every input, left the first, "
            ~ "right the last, full none); got join_type=" ~ tojson(join_type)) %}
    {% endif %}
    {% if join_type == 'inner' %}
        {% set required_inputs = names %}
    {% elif join_type == 'left' %}
        {% set required_inputs = names[:1] %}
    {% elif join_type == 'right' %}
        {% set required_inputs = names[-1:] %}
    {% elif join_type == 'outer' and required is not none %}
        {% set wanted = [required] if required is string else required %}
        {% if wanted is not iterable or wanted is mapping %}
            {% do joinery._raise_argument_error(macro_name, 'required', required, 'expected a list of input names') %}
        {% endif %}
        {% set required_inputs = [] %}
        {% for name in wanted %}
            {% if name not in names %}
                {% do joinery._raise_argument_error(macro_name, 'required', name,
                    'no such input; the inputs are ' ~ tojson(names)) %}
            {% endif %}
        {% endfor %}
        {#- kept in input order, whatever order they were listed in -#}
        {% for name in names if name in wanted %}
            {% do required_inputs.append(name) %}
        {% endfor %}
    {% else %}
        {% set required_inputs = [] %}
    {% endif %}
    {{ return(required_inputs) }}
{% endmacro %}


{% macro _multi_join_check_hints(hints, names, macro_name) %}
    {#- {input name: broadcast | shuffle_hash | merge}, checked; empty without hints. -#}
    {% set hint_names = ['broadcast', 'shuffle_hash', 'merge'] %}
    {% set hint_map = hints if hints is not none else {} %}
    {% if hint_map is not mapping %}
        {% do joinery._raise_argument_error(macro_name, 'hints', hints,
            'expected a mapping of input names to one of ' ~ tojson(hint_names)) %}
    {% endif %}
    {% for name, hint in hint_map.items() %}
        {% if name not in names %}
            {% do joinery._raise_argument_error(macro_name, 'hints', name,
                'no such input; the inputs are ' ~ tojson(names)) %}
        {% endif %}
        {% if hint not in hint_names %}
            {% do joinery._raise_argument_error(macro_name, 'hints', {name: hint},
                'expected one of ' ~ tojson(hint_names)) %}
        {% endif %}
    {% endfor %}
    {{ return(hint_map) }}
{% endmacro %}


{% macro _multi_join_strategy(join_type, required_inputs, full_join_plan, macro_name) %}
    {#- How the SQL is built. With a required input: a chain of joins from the first required input
        (every join on its key, so Spark keeps that partitioning and shuffles each input once). With
        none (full): chained full joins, each on the key coalesced over the inputs before it, which
        is what one writes by hand (each input shuffled once, and each intermediate result once
        more); or with full_join_plan='grouped' one grouped pass over all inputs (the reduce-side
        join: a single shuffle, but collect_list per key, slower; benchmarks/optimizations.md). -#}
    {% set full_join_plans = ['chain', 'grouped'] %}
    {% if full_join_plan not in full_join_plans %}
        {% do joinery._raise_argument_error(macro_name, 'full_join_plan', full_join_plan,
            'expected one of ' ~ tojson(full_join_plans)) %}
    {% endif %}
    {% if join_type == 'cross' %}
        {% set strategy = 'cross' %}
    {% elif required_inputs %}
        {% set strategy = 'chain' %}
    {% elif full_join_plan == 'grouped' %}
        {% set strategy = 'grouped' %}
    {% else %}
        {% set strategy = 'full_chain' %}
    {% endif %}
    {{ return(strategy) }}
{% endmacro %}


{% macro _multi_join_check_null_keys(null_keys, join_type, macro_name) %}
    {#- distinct: SQL's NULL never equals NULL; equal: NULL key parts match each other (<=>). -#}
    {% set allowed = ['distinct', 'equal'] %}
    {% if null_keys not in allowed %}
        {% do joinery._raise_argument_error(macro_name, 'null_keys', null_keys, 'expected one of ' ~ tojson(allowed)
            ~ " ('distinct': a NULL key part matches nothing, as in SQL; 'equal': NULL key parts match each other)") %}
    {% endif %}
    {% if join_type == 'cross' and null_keys != 'distinct' %}
        {% do joinery._raise_argument_error(macro_name, 'null_keys', null_keys,
            'a cross join has no keys to compare; leave `null_keys` out') %}
    {% endif %}
{% endmacro %}
