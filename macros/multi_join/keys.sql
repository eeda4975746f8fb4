{#- multi_join's join keys (plan.sql): each input's key columns, checked against its columns, and
    the key types Spark can join on. -#}

{% macro _multi_join_key_lists(inputs, names, keys, join_type, input_columns, macro_name) %}
    {#- {input name: [key columns]}, the same count for every input; empty for a cross join.
        `input_columns`: each input's columns, read once by the caller (empty at parse time). -#}
    {% set key_lists = {} %}
    {% if join_type == 'cross' %}
        {% if keys %}
            {% do joinery._raise_argument_error(macro_name, 'keys', keys, "a cross join takes no keys; leave `keys` out") %}
        {% endif %}
    {% else %}
        {% if keys is not mapping %}
            {% do joinery._raise_argument_error(macro_name, 'keys', keys,
                'expected a mapping of every input name to its key column(s), e.g. '
                ~ "{'customers': ['cust_id'], 'purchases': ['cust_id']}") %}
        {% endif %}
        {% for name in keys if name not in names %}
            {% do joinery._raise_argument_error(macro_name, 'keys', name,
                'no such input; the inputs are ' ~ tojson(names)) %}
        {% endfor %}
        {% for name in names %}
            {% if name not in keys %}
                {% do joinery._raise_argument_error(macro_name, 'keys', keys | list,
                    'every input needs its key columns; missing: `' ~ name ~ '`') %}
            {% endif %}
            {% set columns = joinery._as_list(keys[name], 'keys', macro_name) %}
            {#- the input's column names read above (none at parse time, when nothing is checked) -#}
            {% set known_columns = (input_columns[name] | map(attribute='name') | list)
                if name in input_columns else none %}
            {% do key_lists.update({name: joinery._require_columns(inputs[name], columns, 'keys', macro_name,
                known_columns)}) %}
        {% endfor %}
        {% set counts = [] %}
        {% for name in names %}
            {% do counts.append(key_lists[name] | length) %}
        {% endfor %}
        {% if counts | unique | list | length > 1 %}
            {% do joinery._raise_argument_error(macro_name, 'keys', keys,
                'every input needs the same number of key columns (they are equal position by position)') %}
        {% endif %}
        {% if execute %}
            {% do joinery._multi_join_check_key_types(names, key_lists, input_columns, macro_name) %}
        {% endif %}
    {% endif %}
    {{ return(key_lists) }}
{% endmacro %}


{% macro _multi_join_check_key_types(names, key_lists, input_columns, macro_name) %}
    {#- Keys Spark cannot join on fail deep in the plan (a map or variant key; strings of two
        collations, INDETERMINATE_COLLATION): a compile error naming the input and column instead. -#}
    {% set collations = {} %}
    {% for name in names %}
        {% for key in key_lists[name] %}
            {% set position = loop.index0 %}
            {% set key_type = (input_columns[name] | selectattr('name', 'equalto', key) | first).dtype %}
            {% if not joinery._is_comparable_type(key_type) %}
                {% do joinery._raise_argument_error(macro_name, 'keys', name ~ '.' ~ key, 'the column is of type '
                    ~ key_type ~ ', which Spark cannot compare (a map or a variant): join on comparable columns') %}
            {% endif %}
            {% set collation = key_type.split(' collate ')[1] if ' collate ' in key_type
                else ('UTF8_BINARY' if key_type | lower == 'string' else none) %}
            {% if collation is not none %}
                {% if position in collations and collations[position][1] != collation %}
                    {% do joinery._raise_argument_error(macro_name, 'keys', name ~ '.' ~ key, 'a string of collation '
                        ~ collation ~ ', while ' ~ collations[position][0] ~ ' is of collation ' ~ collations[position][1]
                        ~ '; Spark cannot tell which to compare them by: collate one side in a model before, e.g. '
                        ~ 'collate(' ~ key ~ ", 'UTF8_BINARY')") %}
                {% endif %}
                {% do collations.update({position: collations.get(position, (name ~ '.' ~ key, collation))}) %}
            {% endif %}
        {% endfor %}
    {% endfor %}
{% endmacro %}
