{#- The Hydrator joiner's checks and output schema, shared by `multi_join` (which renders the SQL)
    and `describe_join` (which prints the schemas). Every argument is validated here, so both fail
    with the same messages. Callers run it only when `execute` is true (column checks need the
    inputs' columns); without `execute` it checks what it can and the plan has no output columns. -#}

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


{% macro _multi_join_references(items) %}
    {% set references = [] %}
    {% for item in items %}
        {% do references.append(item.input ~ '.' ~ item.column) %}
    {% endfor %}
    {{ return(references) }}
{% endmacro %}


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
