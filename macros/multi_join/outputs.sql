{#- multi_join's output columns (plan.sql): the default schema or `select`, then `drop`, `rename`
    and `qualify`, each 'input.column' or 'join_key.column' reference resolved, and no name twice. -#}

{% macro _multi_join_outputs(plan, select, rename, drop, qualify) %}
    {#- The output columns in order: [{name, input, column, dtype, key_index}]. -#}
    {% set macro_name = plan.macro_name %}
    {% set first = plan.names[0] %}
    {% set items = [] %}
    {% if select is not none %}
        {% for reference in joinery._as_list(select, 'select', macro_name) %}
            {% do items.append(joinery._multi_join_reference(plan, reference, 'select')) %}
        {% endfor %}
    {% else %}
        {% if plan.strategy != 'cross' %}
            {% for key in plan['keys'][first] %}
                {% do items.append(joinery._multi_join_reference(plan, 'join_key.' ~ key, 'keys')) %}
            {% endfor %}
        {% endif %}
        {% for name in plan.names %}
            {% set key_names = (plan['keys'][name] or []) | map('lower') | list %}
            {% for column in plan.columns[name] if column.name | lower not in key_names %}
                {% do items.append(joinery._multi_join_reference(plan, name ~ '.' ~ column.name, 'inputs')) %}
            {% endfor %}
        {% endfor %}
        {% if drop is not none %}
            {% set items = joinery._multi_join_drop(plan, items, drop) %}
        {% endif %}
    {% endif %}

    {#- names: bare, or <input>__<column> with qualify; then renames -#}
    {% for item in items %}
        {% do item.update({'name': item.input ~ '__' ~ item.column if qualify else item.column}) %}
    {% endfor %}
    {% for reference, new_name in (rename or {}).items() %}
        {% set target = joinery._multi_join_reference(plan, reference, 'rename') %}
        {% do joinery._validate_identifier(new_name, 'rename', macro_name) %}
        {% set matches = [] %}
        {% for item in items if item.input == target.input and item.column == target.column %}
            {% do item.update({'name': new_name}) %}
            {% do matches.append(item) %}
        {% endfor %}
        {% if not matches %}
            {% do joinery._raise_argument_error(macro_name, 'rename', reference,
                'not an output column; the output columns are ' ~ tojson(joinery._multi_join_references(items))) %}
        {% endif %}
    {% endfor %}
    {% do joinery._multi_join_check_output_names(items, macro_name) %}
    {{ return(items) }}
{% endmacro %}


{% macro _multi_join_drop(plan, items, drop) %}
    {#- `items` without the outputs `drop` names ('input.column' or 'join_key.column'), each of which
        must be an output column. Apart from _multi_join_outputs, which it would make too long. -#}
    {% set dropped = [] %}
    {% for reference in joinery._as_list(drop, 'drop', plan.macro_name, allow_empty=true) %}
        {% set item = joinery._multi_join_reference(plan, reference, 'drop') %}
        {% do dropped.append(item.input ~ '.' ~ item.column) %}
    {% endfor %}
    {% set present = joinery._multi_join_references(items) %}
    {% for reference in dropped if reference not in present %}
        {% do joinery._raise_argument_error(plan.macro_name, 'drop', reference,
            'not an output column; the output columns are ' ~ tojson(present)) %}
    {% endfor %}
    {% set kept = [] %}
    {% for item in items if (item.input ~ '.' ~ item.column) not in dropped %}
        {% do kept.append(item) %}
    {% endfor %}
    {{ return(kept) }}
{% endmacro %}


{% macro _multi_join_check_output_names(items, macro_name) %}
    {#- Every output name once (Spark compares names ignoring case): a compile error listing every
        clash and how to resolve it. Apart from _multi_join_outputs, which it would make too long. -#}
    {% set by_name = {} %}
    {% for item in items %}
        {% do by_name.setdefault(item.name | lower, []).append(item.input ~ '.' ~ item.column) %}
    {% endfor %}
    {% set clashes = [] %}
    {% for name, sources in by_name.items() if sources | length > 1 %}
        {% do clashes.append('`' ~ name ~ '` from ' ~ sources | join(' and ')) %}
    {% endfor %}
    {% if clashes %}
        {% do exceptions.raise_compiler_error(
            'joinery.' ~ macro_name ~ ': the output has clashing column names: ' ~ clashes | join('; ')
            ~ '. Give each output column a distinct name: rename one (rename={"<input>.<column>": "new_name"}), '
            ~ 'leave it out (drop=["<input>.<column>"] or select=[...]), or set qualify=true to name every '
            ~ 'column <input>__<column>.') %}
    {% endif %}
{% endmacro %}


{% macro _multi_join_references(items) %}
    {% set references = [] %}
    {% for item in items %}
        {% do references.append(item.input ~ '.' ~ item.column) %}
    {% endfor %}
    {{ return(references) }}
{% endmacro %}


{% macro _multi_join_reference(plan, reference, argument) %}
    {#- 'input.column' -> {input, column (spelled as in the input), dtype, key_index}: that input's own
        value (NULL where the input has no row). 'join_key.column' is the join key itself (coalesced
        across inputs in a full join), its columns named as the first input's key columns; key_index
        is its position in the key. -#}
    {% set macro_name = plan.macro_name %}
    {% if reference is not string or '.' not in reference %}
        {% do joinery._raise_argument_error(macro_name, argument, reference,
            "expected 'input.column' with an input of " ~ tojson(plan.names) ~ ", or 'join_key.column'") %}
    {% endif %}
    {% set name, column = reference.split('.', 1) %}
    {% if name | lower == 'join_key' %}
        {{ return(joinery._multi_join_key_reference(plan, reference, column, argument)) }}
    {% endif %}
    {% if name not in plan.names %}
        {% do joinery._raise_argument_error(macro_name, argument, reference,
            'no such input `' ~ name ~ '`; the inputs are ' ~ tojson(plan.names) ~ ", and 'join_key.<column>' "
            ~ 'is the join key') %}
    {% endif %}
    {% set available = plan.columns[name] | map(attribute='name') | list %}
    {% set found = joinery._find_column(available, column) %}
    {% if found is none %}
        {% do joinery._raise_argument_error(macro_name, argument, reference,
            'no such column in input `' ~ name ~ '` (' ~ plan.relations[name] ~ '); its columns are '
            ~ tojson(available)) %}
    {% endif %}
    {% set dtype = (plan.columns[name] | selectattr('name', 'equalto', found) | first).dtype %}
    {{ return({'input': name, 'column': found, 'dtype': dtype, 'key_index': none}) }}
{% endmacro %}


{% macro _multi_join_key_reference(plan, reference, column, argument) %}
    {#- 'join_key.column': a column of the join key, named as the first input's key column. -#}
    {% if plan.strategy == 'cross' %}
        {% do joinery._raise_argument_error(plan.macro_name, argument, reference, 'a cross join has no join key') %}
    {% endif %}
    {% set first = plan.names[0] %}
    {% set found = joinery._find_column(plan['keys'][first], column) %}
    {% if found is none %}
        {% do joinery._raise_argument_error(plan.macro_name, argument, reference,
            'no such join key column; the join key columns (named as the first input `' ~ first ~ '` names them) are '
            ~ tojson(plan['keys'][first])) %}
    {% endif %}
    {% set dtype = (plan.columns[first] | selectattr('name', 'equalto', found) | first).dtype %}
    {{ return({'input': 'join_key', 'column': found, 'dtype': dtype,
               'key_index': plan['keys'][first].index(found)}) }}
{% endmacro %}
