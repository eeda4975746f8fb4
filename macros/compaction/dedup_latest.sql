{#- dedup_latest: one row per key, the latest by `order_by` (seed document 004, "Duplicate Keys in
    Delta"). The document's correlated `t.ts IN (SELECT MAX(ts) ...)` keeps every row that ties on
    the maximum and drops keys whose ts is NULL; `row_number() ... = 1` keeps exactly one row per key
    and plans as a WindowGroupLimit, which Spark evaluates before the shuffle. -#}

{% macro dedup_latest(relation, key, order_by, tie_breaker=none) %}
    {{ return(adapter.dispatch('dedup_latest', 'joinery')(relation, key, order_by, tie_breaker)) }}
{% endmacro %}


{% macro default__dedup_latest(relation, key, order_by, tie_breaker=none) %}
    {% set relation = joinery._relation_list(relation, 'relation', 'dedup_latest') %}
    {% if relation | length != 1 %}
        {{ joinery._raise_argument_error('dedup_latest', 'relation', relation | map('string') | list,
            'expected one relation (ref(), source() or this)') }}
    {% endif %}
    {% set relation = relation[0] %}
    {#- One `describe` of the relation for every check below (empty at parse time). -#}
    {% set described = joinery._columns_of(relation) %}
    {% set available = described | map(attribute='name') | list %}
    {% set key_columns = joinery._column_argument(relation, key, 'key', 'dedup_latest', available) %}
    {% set order_sql = joinery._order_expressions(order_by, available, 'order_by', 'dedup_latest') %}
    {% if tie_breaker is none %}
        {% set tie_sql = joinery._default_tie_breaker(described, key_columns) %}
    {% else %}
        {% set tie_sql = joinery._order_expressions(tie_breaker, available, 'tie_breaker', 'dedup_latest') %}
    {% endif %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% set ordering = [] %}
    {% for expression in order_sql + tie_sql %}
        {% do ordering.append(expression ~ ' desc nulls last') %}
    {% endfor %}
    {% set ranked_sql %}
    select
        {{ joinery._quoted_column_list(available) }}
    from (
        select
            *,
            row_number() over (
                partition by {{ joinery._quoted_column_list(key_columns) }}
                order by {{ ordering | join(', ') }}
            ) as _joinery_row_number
        from {{ relation }}
    ) as ranked
    where _joinery_row_number = 1
    {%- endset %}
    {{ return(ranked_sql) }}
{% endmacro %}


{% macro _order_expressions(value, available, argument, macro_name) %}
    {#- SQL expressions to order by (one or a list). A bare identifier must be a column of the
        relation and is backtick-quoted; anything else is taken as a documented SQL expression. -#}
    {% set expressions = joinery._as_list(value, argument, macro_name) %}
    {% set rendered = [] %}
    {% for expression in expressions %}
        {% if expression is not string or expression | trim == '' %}
            {{ joinery._raise_argument_error(macro_name, argument, value,
                'expected a column name or SQL expression, or a list of them') }}
        {% endif %}
        {% if modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', expression | trim) %}
            {% set column = joinery._find_column(available, expression | trim) %}
            {% if column is none and execute %}
                {{ joinery._raise_argument_error(macro_name, argument, expression,
                    'no such column; columns are ' ~ tojson(available)) }}
            {% endif %}
            {% do rendered.append(joinery._quote_identifier(column or expression | trim)) %}
        {% else %}
            {% do rendered.append('(' ~ joinery._sql_expression(expression) ~ ')') %}
        {% endif %}
    {% endfor %}
    {{ return(rendered) }}
{% endmacro %}


{% macro _default_tie_breaker(columns, key_columns) %}
    {#- Every non-key column, in its comparable form (_comparable_sql: maps and variants, which Spark
        cannot order, and collated strings, under which 'a' and 'A' tie), so that rows tying on
        order_by resolve the same way on every run and in any input order. -#}
    {% set tie = [] %}
    {% for column in columns %}
        {% if (column.name | lower) not in (key_columns | map('lower') | list) %}
            {% do tie.append(joinery._comparable_sql(joinery._quote_identifier(column.name), column.dtype)) %}
        {% endif %}
    {% endfor %}
    {{ return(tie) }}
{% endmacro %}
