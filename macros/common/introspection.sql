{#- Reading the columns of a relation. Guarded by `execute`, so parsing, `dbt ls` and linting never
    query Spark: at parse time these return empty results and callers must not fail on them. -#}

{% macro columns_of(relation) %}
    {#- Columns of a relation as adapter Column objects (name, dtype), in table order. -#}
    {% if not execute %}
        {{ return([]) }}
    {% endif %}
    {{ return(adapter.get_columns_in_relation(relation)) }}
{% endmacro %}


{% macro column_names(relation) %}
    {{ return(joinery.columns_of(relation) | map(attribute='name') | list) }}
{% endmacro %}


{% macro find_column(names, wanted) %}
    {#- The name in `names` equal to `wanted` ignoring case (Spark resolves columns case-insensitively),
        or none. -#}
    {% for name in names if name | lower == wanted | lower %}
        {{ return(name) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}


{% macro require_columns(relation, columns, argument, macro_name, available=none) %}
    {#- Every name in `columns` must be a column of `relation`; returns them spelled as in the relation.
        `available`: the relation's column names, when the caller already read them. Skipped at parse
        time (no columns known). -#}
    {% if not execute %}
        {{ return(columns) }}
    {% endif %}
    {% set available = available if available is not none else joinery.column_names(relation) %}
    {% set found = [] %}
    {% set missing = [] %}
    {% for column in columns %}
        {% set match = joinery.find_column(available, column) %}
        {% if match is none %}
            {% do missing.append(column) %}
        {% else %}
            {% do found.append(match) %}
        {% endif %}
    {% endfor %}
    {% if missing %}
        {{ joinery.raise_argument_error(macro_name, argument, missing,
            'no such column in ' ~ relation ~ '; its columns are ' ~ tojson(available)) }}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{% macro equal_rows_columns(expected, columns) %}
    {#- The columns the `equal_rows` test compares: `columns` if given, else those of `expected`. -#}
    {% if expected is none %}
        {{ joinery.raise_argument_error('equal_rows', 'expected', expected, 'expected a relation: ref() or source()') }}
    {% endif %}
    {% if columns is not none %}
        {{ return(joinery.as_list(columns, 'columns', 'equal_rows')) }}
    {% endif %}
    {{ return(joinery.column_names(expected)) }}
{% endmacro %}
