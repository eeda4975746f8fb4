{#- Reading the columns of a relation. Guarded by `execute`, so parsing, `dbt ls` and linting never
    query Spark: at parse time these return empty results and callers must not fail on them. -#}

{% macro columns_of(relation) %}
    {#- Columns of a relation as adapter Column objects (name, dtype), in table order. -#}
    {% if not execute %}
        {{ return([]) }}
    {% endif %}
    {#- Under `dbt build --empty` a ref() or source() renders as `(select * from t where false limit 0)`,
        and in a microbatch model as a filtered subquery: `describe` takes neither, so the relation
        itself is described. -#}
    {% if relation.incorporate is defined %}
        {% set relation = relation.incorporate(limit=none, event_time_filter=none) %}
    {% endif %}
    {#- A ref() of an ephemeral model, and every input of a dbt unit test, is a CTE of the calling
        model's SQL: Spark has no table to describe, and its SQL is not compiled yet. -#}
    {% if relation.is_cte is defined and relation.is_cte %}
        {% do exceptions.raise_compiler_error('joinery: input ' ~ relation ~ ' is a CTE (an ephemeral model, or '
            ~ 'an input of a dbt unit test): joinery reads the columns of its inputs from Spark, which has no '
            ~ 'table for a CTE. Materialize that model as a view or a table. dbt unit tests do not support '
            ~ "models that read their inputs' columns (introspective queries)") %}
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
