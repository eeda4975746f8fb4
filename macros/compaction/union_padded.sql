{#- union_padded: UNION ALL by column name over relations whose schemas drifted (seed document 004,
    "Schema Changes"). The column plan (names, widened types, padding) is built by
    `joinery._union_column_plan` so that `compact` pads its snapshot and deltas exactly the same way. -#}

{% macro union_padded(relations, defaults={}, removed='keep', source_column=none) %}
    {{ return(adapter.dispatch('union_padded', 'joinery')(relations, defaults, removed, source_column)) }}
{% endmacro %}


{% macro default__union_padded(relations, defaults={}, removed='keep', source_column=none) %}
    {% set relations = joinery._relation_list(relations, 'relations', 'union_padded') %}
    {% if source_column is not none %}
        {% do joinery._validate_identifier(source_column, 'source_column', 'union_padded') %}
    {% endif %}
    {% set plan = joinery._union_column_plan(relations, defaults, removed, 'union_padded') %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% if source_column is not none and joinery._find_column(plan | map(attribute='name') | list, source_column) %}
        {{ joinery._raise_argument_error('union_padded', 'source_column', source_column,
            'a name that is not already a column of the relations') }}
    {% endif %}
    {% set selects = [] %}
    {% for relation in relations %}
        {% set select_sql %}
    select
        {{ joinery._padded_select_list(plan, loop.index0) }}
        {%- if source_column is not none %},
        {{ loop.index0 }} as {{ joinery._quote_identifier(source_column) }}
        {%- endif %}
    from {{ relation }}
        {%- endset %}
        {% do selects.append(select_sql) %}
    {% endfor %}
    {{ return(selects | join('\n    union all\n')) }}
{% endmacro %}


{% macro _relation_list(value, argument, macro_name, allow_empty=false) %}
    {#- A relation argument may be one relation or a list of them; each must be a ref(), source() or
        this, because joinery reads their columns. -#}
    {% if value is string or value is none or value.identifier is defined %}
        {% set items = [value] %}
    {% elif value is iterable and value is not mapping %}
        {% set items = value | list %}
    {% else %}
        {% set items = [value] %}
    {% endif %}
    {% if items | length == 0 and not allow_empty %}
        {{ joinery._raise_argument_error(macro_name, argument, [], 'expected at least one relation') }}
    {% endif %}
    {% for item in items %}
        {% if item is string or item is none or item.identifier is not defined %}
            {{ joinery._raise_argument_error(macro_name, argument, item | string,
                'expected a relation (ref(), source() or this) or a list of them') }}
        {% endif %}
    {% endfor %}
    {{ return(items) }}
{% endmacro %}


{% macro _union_column_plan(relations, defaults, removed, macro_name, described=none) %}
    {#- One entry per output column: {name, type, sources: {relation index: column name},
        source_types: {relation index: type}, default: SQL literal or none}. Output order is
        first appearance; removed='drop' keeps only the columns of the last relation. `described`:
        the relations' columns (a list per relation), when the caller read them already. -#}
    {% if defaults is none %}{% set defaults = {} %}{% endif %}
    {% do joinery._union_check_arguments(defaults, removed, macro_name) %}
    {% if not execute %}
        {{ return([]) }}
    {% endif %}

    {% set plan = [] %}
    {% set by_name = {} %}
    {% for relation in relations %}
        {% set relation_index = loop.index0 %}
        {% for column in (described[relation_index] if described is not none else joinery._columns_of(relation)) %}
            {% set lowered = column.name | lower %}
            {% if lowered not in by_name %}
                {% set entry = {'name': column.name, 'sources': {}, 'source_types': {}} %}
                {% do by_name.update({lowered: entry}) %}
                {% do plan.append(entry) %}
            {% endif %}
            {% do by_name[lowered].sources.update({relation_index: column.name}) %}
            {% do by_name[lowered].source_types.update({relation_index: column.dtype}) %}
        {% endfor %}
    {% endfor %}

    {% for column, literal in defaults.items() %}
        {% if (column | lower) not in by_name %}
            {{ joinery._raise_argument_error(macro_name, 'defaults', column,
                'a key of defaults must be a column of one of the relations; columns are '
                ~ tojson(plan | map(attribute='name') | list)) }}
        {% endif %}
    {% endfor %}
    {% set default_by_name = {} %}
    {% for column, literal in defaults.items() %}
        {% do default_by_name.update({column | lower: joinery._sql_expression(literal ~ '')}) %}
    {% endfor %}

    {% set kept = [] %}
    {% for entry in plan %}
        {% if removed == 'keep' or ((relations | length) - 1) in entry.sources %}
            {% set typed = [] %}
            {% for i in range(relations | length) if i in entry.source_types %}
                {% do typed.append({'relation': relations[i] | string, 'type': entry.source_types[i]}) %}
            {% endfor %}
            {% do entry.update({
                'type': joinery._widest_type(entry.name, typed, macro_name),
                'default': default_by_name.get(entry.name | lower)}) %}
            {% do kept.append(entry) %}
        {% endif %}
    {% endfor %}
    {{ return(kept) }}
{% endmacro %}


{% macro _widest_type(column_name, typed, macro_name) %}
    {#- The common type of one column across relations: integral types widen to the largest, mixed
        with decimal to a decimal holding both, with float/double to double; date with timestamp to
        timestamp; char/varchar/string to string. Anything else must match exactly. -#}
    {% set types = typed | map(attribute='type') | unique | list %}
    {% if types | length == 1 %}
        {{ return(types[0]) }}
    {% endif %}
    {% set numeric_type = joinery._widest_numeric_type(column_name, typed, types, macro_name) %}
    {% if numeric_type is not none %}
        {{ return(numeric_type) }}
    {% endif %}
    {% set temporal = types | reject('in', ['date', 'timestamp', 'timestamp_ltz', 'timestamp_ntz']) | list %}
    {% if not temporal %}
        {{ return('timestamp_ntz' if 'timestamp_ntz' in types and 'timestamp' not in types
            and 'timestamp_ltz' not in types else 'timestamp') }}
    {% endif %}
    {% set textual = [] %}
    {% for t in types if not (t == 'string' or t.startswith('varchar(') or t.startswith('char(')) %}
        {% do textual.append(t) %}
    {% endfor %}
    {% if not textual %}
        {{ return('string') }}
    {% endif %}
    {{ joinery._raise_argument_error(macro_name, 'relations',
        {'column': column_name, 'types': joinery._described_types(typed)},
        'the types of one column cannot be reconciled; joinery widens tinyint < smallint < int < bigint '
        ~ '< decimal < double, date < timestamp and char/varchar to string. Cast the column to one type '
        ~ 'in a model before this one') }}
{% endmacro %}


{% macro _union_check_arguments(defaults, removed, macro_name) %}
    {#- _union_column_plan's arguments, checked before any relation is read: defaults maps column
        names to SQL literals, and removed is 'keep' or 'drop'. -#}
    {% if defaults is not mapping %}
        {{ joinery._raise_argument_error(macro_name, 'defaults', defaults | string,
            'expected a mapping of column name to SQL literal, e.g. {"value2": "\'default\'"}') }}
    {% endif %}
    {% for column, literal in defaults.items() %}
        {% if literal is not string and literal is not number %}
            {{ joinery._raise_argument_error(macro_name, 'defaults', {column: literal | string},
                'expected a SQL literal (a string such as "\'default\'" or a number) for each column') }}
        {% endif %}
    {% endfor %}
    {% if removed not in ['keep', 'drop'] %}
        {{ joinery._raise_argument_error(macro_name, 'removed', removed,
            'expected "keep" (pad columns missing from newer relations with NULL) or "drop"') }}
    {% endif %}
{% endmacro %}


{% macro _widest_numeric_type(column_name, typed, types, macro_name) %}
    {#- _widest_type's rule for numbers, over `types` (two or more, each once): the integral type of
        the most digits, a decimal holding every value, or double with a float or double in them;
        none when one of them is not numeric, so that _widest_type tries its other rules. -#}
    {% set integral_digits = {'tinyint': 3, 'byte': 3, 'smallint': 5, 'short': 5, 'int': 10, 'integer': 10,
        'bigint': 20, 'long': 20} %}
    {% set integral_names = {3: 'tinyint', 5: 'smallint', 10: 'int', 20: 'bigint'} %}
    {% set numeric = namespace(ok=true, fractional=false, decimal=false, whole=0, scale=0) %}
    {% for t in types %}
        {% set decimal_match = modules.re.match('^(?:decimal|numeric)(?:\\((\\d+),(\\d+)\\))?$', t) %}
        {% if t in integral_digits %}
            {% set numeric.whole = [numeric.whole, integral_digits[t]] | max %}
        {% elif decimal_match %}
            {% set precision = (decimal_match.group(1) or 10) | int %}
            {% set scale = (decimal_match.group(2) or 0) | int %}
            {% set numeric.decimal = true %}
            {% set numeric.whole = [numeric.whole, precision - scale] | max %}
            {% set numeric.scale = [numeric.scale, scale] | max %}
        {% elif t in ['float', 'double', 'real'] %}
            {% set numeric.fractional = true %}
        {% else %}
            {% set numeric.ok = false %}
        {% endif %}
    {% endfor %}
    {% if numeric.ok %}
        {% if numeric.fractional %}
            {{ return('double') }}
        {% elif numeric.decimal and numeric.whole + numeric.scale > 38 %}
            {#- Spark would cap the precision at 38 and keep the scale, so a value with more whole
                digits than the capped type holds would fail (ANSI) or become NULL (ANSI off). -#}
            {{ joinery._raise_argument_error(macro_name, 'relations',
                {'column': column_name, 'types': joinery._described_types(typed)},
                'no decimal holds every value of these types: that takes ' ~ numeric.whole
                ~ ' digits before the point and ' ~ numeric.scale ~ ' after it, and Spark allows 38 in all. '
                ~ 'Cast the column to one type in a model before this one') }}
        {% elif numeric.decimal %}
            {{ return('decimal(' ~ (numeric.whole + numeric.scale) ~ ',' ~ numeric.scale ~ ')') }}
        {% else %}
            {{ return(integral_names[numeric.whole]) }}
        {% endif %}
    {% endif %}
    {{ return(none) }}
{% endmacro %}


{% macro _described_types(typed) %}
    {#- ['<relation>: <type>', ...] of one column, for an error message. -#}
    {% set described = [] %}
    {% for item in typed %}
        {% do described.append(item.relation ~ ': ' ~ item.type) %}
    {% endfor %}
    {{ return(described) }}
{% endmacro %}


{% macro _padded_expression(entry, relation_index, prefix=none) %}
    {#- Column `entry` as read from relation number `relation_index` (table alias `prefix`): the
        column itself, cast to the widened type when needed, or the default / NULL when missing. -#}
    {% set source = entry.sources.get(relation_index) %}
    {% if source is none %}
        {{ return('cast(' ~ (entry.default if entry.default is not none else 'null') ~ ' as ' ~ entry.type ~ ')') }}
    {% endif %}
    {% set column_sql = (prefix ~ '.' if prefix else '') ~ joinery._quote_identifier(source) %}
    {% if entry.source_types[relation_index] == entry.type %}
        {{ return(column_sql) }}
    {% endif %}
    {{ return('cast(' ~ column_sql ~ ' as ' ~ entry.type ~ ')') }}
{% endmacro %}


{% macro _padded_select_list(plan, relation_index, prefix=none) %}
    {% set items = [] %}
    {% for entry in plan %}
        {% do items.append(joinery._select_item(joinery._padded_expression(entry, relation_index, prefix),
            entry.name)) %}
    {% endfor %}
    {{ return(items | join(',\n        ')) }}
{% endmacro %}
