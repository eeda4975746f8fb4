{#- Comparing values exactly. Spark cannot compare, order or group maps and variants, and compares
    a string of a non-binary collation by that collation ('a' equals 'A' under UTF8_LCASE). Where
    joinery decides whether two rows are the same (an incremental run's unchanged rows, a test's
    multiset comparison) or breaks ties by the row's content, it compares these forms instead. -#}

{% macro _comparable_sql(expression, type) %}
    {#- `expression`, of Spark type `type` (as `describe` prints it), in a form Spark compares,
        orders and hashes exactly: a top-level collated string cast to the default binary collation;
        a map, a variant or any type holding one, or a collated string nested in a struct or array,
        as its JSON text (a map's entries in their stored order); anything else as it is. -#}
    {% set t = type | lower %}
    {% if joinery._is_comparable_type(t) and ' collate ' not in t %}
        {{ return(expression) }}
    {% endif %}
    {% if t.startswith('string collate ') %}
        {{ return('cast(' ~ expression ~ ' as string)') }}
    {% endif %}
    {{ return('to_json(' ~ expression ~ ')') }}
{% endmacro %}


{% macro _is_comparable_type(type) %}
    {#- Whether Spark can compare values of `type` (a key must be): not a map or a variant, nor a
        type holding one. -#}
    {{ return(modules.re.search('map<|(^|[<:,])variant($|[>,])', type | lower) is none) }}
{% endmacro %}


{% macro _same_value_sql(left, right, type) %}
    {#- `left` and `right`, of Spark type `type`, hold the same value (NULL equal to NULL). -#}
    {{ return(joinery._comparable_sql(left, type) ~ ' <=> ' ~ joinery._comparable_sql(right, type)) }}
{% endmacro %}


{% macro _comparable_select_sql(columns, names, prefix=none) %}
    {#- The select list of columns `names`, each in its comparable form under its own name, typed
        from `columns` (adapter Columns of the relation, read by the caller); `*` when there are no
        names (at parse time). A name without a type (a relation not built yet, at `dbt compile`)
        stays as it is. -#}
    {% if not names %}
        {{ return('*') }}
    {% endif %}
    {% set types = {} %}
    {% for column in columns %}
        {% do types.update({column.name | lower: column.dtype}) %}
    {% endfor %}
    {% set parts = [] %}
    {% for name in names %}
        {% set column_sql = (prefix ~ '.' if prefix else '') ~ joinery._quote_identifier(name) %}
        {% do parts.append(joinery._select_item(joinery._comparable_sql(column_sql, types.get(name | lower, '')),
            name)) %}
    {% endfor %}
    {{ return(parts | join(', ')) }}
{% endmacro %}
